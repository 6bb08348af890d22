"""test_options.py: every subcommand's options as a user meets them: --help lists them, the shared ones
read the same everywhere; an unknown option, a missing value, a value out of range or not among the
choices is a usage error (exit 2) that names the option and the value, and writes nothing; and each
option of `continue` reaches the music: the defaults written out give the same bytes as no options,
and a changed value changes them."""

import os
import re
import subprocess
import sys
import tempfile

CONTINUO = os.environ["CONTINUO"]
SRC = os.environ["CONTINUO_SRC"]
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
MOTIF = os.path.join(SRC, "models", "motif.mid")
COMMANDS = ["encode", "decode", "inspect", "continue", "eval", "bench", "serve", "ctl", "demo", "doctor", "journal",
            "adapt", "view"]
fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


def run(*args, cwd=None):
    env = dict(os.environ, XDG_CONFIG_HOME=cwd or "/nonexistent", XDG_CONFIG_DIRS="/nonexistent")
    return subprocess.run([CONTINUO, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def option_rows(help_text):
    """{'--name': 'the row and its continuation lines'} of a help's options section."""
    rows, name = {}, None
    for line in help_text.split("\noptions:\n", 1)[1].splitlines():
        m = re.match(r"  (?:-\w, )?(--[\w-]+)", line)
        if m:
            name = m.group(1)
            rows[name] = line[len(m.group(0)):].strip()
        elif name and line.startswith("    "):
            rows[name] += " " + line.strip()
        else:
            name = None
    return {k: " ".join(v.split()) for k, v in rows.items()}


def test_help():
    rows = {}
    for cmd in COMMANDS:
        r = run(cmd, "--help")
        check(r.returncode == 0 and r.stdout.startswith("usage: continuo " + cmd) and r.stderr == "",
              f"{cmd} --help: usage on stdout, exit 0")
        rows[cmd] = option_rows(r.stdout) if "\noptions:\n" in r.stdout else {}
        check(rows[cmd].get("--help") == "this help", f"{cmd} --help lists -h, --help")
        r2 = run(cmd, "-h")
        check(r2.returncode == 0 and r2.stdout == r.stdout, f"{cmd} -h is --help")
    for opt, cmds in (("--model", ["continue", "eval", "bench"]), ("--threads", ["continue", "eval", "bench"]),
                      ("--config", ["serve", "doctor", "journal", "adapt"]), ("--set", ["serve", "doctor"]),
                      ("--wav", ["continue", "demo"]), ("--play", ["continue", "demo"]),
                      ("--quiet", ["encode", "decode"])):
        texts = {rows[c].get(opt) for c in cmds}
        check(len(texts) == 1 and None not in texts, f"{opt} reads the same in {', '.join(cmds)}: {texts}")
    expected = {
        "encode": ["--output", "--vocab", "--stretch", "--transpose", "--eos", "--list", "--split-file", "--split",
                   "--root", "--skip-bad", "--quiet"],
        "decode": ["--output", "--index", "--vocab", "--max-note-seconds", "--quiet"],
        "continue": ["--output", "--model", "--seconds", "--temperature", "--top-p", "--top-k", "--min-p",
                     "--filter-time-shifts", "--pace", "--key-pull", "--max-held", "--max-note-ms", "--density",
                     "--register", "--pitch-low", "--pitch-high", "--velocity", "--key", "--key-lock",
                     "--rhythm-temperature", "--pitch-temperature", "--motif", "--candidates", "--candidate-score",
                     "--seed", "--memory", "--step", "--verbose", "--plot", "--plot-attention", "--wav", "--play",
                     "--threads"],
        "eval": ["--model", "--memory", "--threads"],
        "bench": ["--model", "--threads", "--events", "--torch-script", "--no-torch"],
        "serve": ["--config", "--set", "--check", "--dump-config", "--list-ports", "--verbose"],
        "ctl": ["--socket", "--timeout"],
        "demo": ["--output", "--wav", "--play"],
        "doctor": ["--config", "--set"],
        "journal": ["--dir", "--config", "--output", "--minutes"],
        "adapt": ["--minutes", "--list", "--use", "--reset", "--journal", "--model", "--reference", "--threads",
                  "--lr", "--kl-weight", "--replay-weight", "--max-steps", "--output", "--config"],
    }
    for cmd, opts in expected.items():
        missing = [o for o in opts if o not in rows[cmd]]
        check(not missing, f"{cmd} --help documents {' '.join(opts)} (missing: {missing})")


def usage_error(args, *needles, out=None):
    r = run(*args)
    ok = r.returncode == 2 and all(n in r.stderr for n in needles) and not (out and os.path.exists(out))
    check(ok, f"{' '.join(args)}: exit 2 naming {needles} ({r.returncode}: {r.stderr.strip()[:80]})")


def test_usage_errors(d):
    out = os.path.join(d, "never.mid")
    tok = os.path.join(d, "never.tok")
    for cmd in COMMANDS:
        usage_error([cmd, "--no-such-option"], f"continuo {cmd}: unknown option '--no-such-option'")
    usage_error(["encode", MOTIF, "-o"], "continuo encode: -o needs a file name")
    usage_error(["encode", MOTIF, "-o", tok, "--transpose", "200"], "--transpose", "-127..127", "'200'", out=tok)
    usage_error(["encode", MOTIF, "-o", tok, "--stretch", "abc"], "--stretch", "'abc'", out=tok)
    usage_error(["decode", "x.tok", "-o", out, "--index", "-1"], "--index", "'-1'", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--seconds"], "--seconds needs a value", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--top-p", "2"], "--top-p", "'2'", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--temperature", "hot"], "--temperature",
                "'hot'", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--top-k", "1.5"], "--top-k", "'1.5'", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--seed", "-4"], "--seed", "'-4'", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--memory", "rolling"], "--memory",
                "window or stream", "'rolling'", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--wav", ""], "--wav needs a file name", out=out)
    usage_error(["continue", MOTIF, "-o", out, "--model", MODEL, "--play=yes"], "--play takes no value", out=out)
    usage_error(["eval", "--threads", "0", MOTIF], "--threads", "1..64", "'0'")
    usage_error(["eval", "--memory", "rolling", MOTIF], "--memory", "'rolling'")
    usage_error(["bench", "--events", "0"], "--events", "'0'")
    usage_error(["ctl", "--timeout", "0", "status"], "--timeout", "'0'")
    usage_error(["ctl", "--socket"], "--socket needs a file name")
    usage_error(["serve", "--config"], "--config needs a file name")
    usage_error(["doctor", "--set"], "--set needs a value")
    usage_error(["serve", "--set", "temperature=hot"], "--set temperature=hot: expected a number")
    usage_error(["inspect", "--x"], "unknown option '--x'")
    usage_error(["adapt", "--minutes", "0"], "--minutes", "'0'")
    usage_error(["adapt", "--use", "1", "--reset"], "continuo adapt: --list, --use and --reset go alone")
    usage_error(["continue", MOTIF, "--model", MODEL], "usage: continuo continue PRIMER.mid -o OUT.mid")
    # ctl's words after the command are the command's, even when they start with '-'
    r = run("ctl", "--socket", os.path.join(d, "no-socket"), "--timeout", "100", "set", "cc_panic", "-1")
    check(r.returncode == 1 and "unknown option" not in r.stderr and "no-socket" in r.stderr,
          f"ctl set cc_panic -1: the words go to the service ({r.returncode}: {r.stderr.strip()[:200]})")


def cont(d, name, *opts):
    path = os.path.join(d, name + ".mid")
    r = run("continue", MOTIF, "-o", path, "--model", MODEL, "--seconds", "4", *opts)
    check(r.returncode == 0, f"continue {' '.join(opts)}: {r.stderr.strip()[:200]}")
    return open(path, "rb").read() if r.returncode == 0 else None


def test_continue_options(d):
    base = cont(d, "base", "--seed", "3")
    same = cont(d, "defaults", "--seed=3", "--temperature", "1.0", "--top-k", "0", "--top-p", "0.95", "--min-p", "0",
                "--max-held", "24", "--max-note-ms", "5000", "--memory", "stream", "--threads", "2")
    check(base is not None and base == same, "continue: the defaults written out give the same bytes")
    order = cont(d, "order", "--threads", "2", "--memory", "stream", "--seed", "3")
    check(base is not None and base == order, "continue: options before or after, the same bytes")
    changed = {}
    for opts in (["--seed", "4"], ["--temperature", "0.5"], ["--top-k", "3"], ["--top-p", "0.3"],
                 ["--min-p", "0.3"], ["--max-held", "1"], ["--max-note-ms", "100"], ["--seconds", "3"]):
        changed[opts[0]] = cont(d, "other", "--seed", "3", *opts)
        check(base is not None and changed[opts[0]] not in (None, base),
              f"continue: {' '.join(opts)} changes the music")
    filtered = cont(d, "filtered", "--seed", "3", "--top-k", "3", "--filter-time-shifts")
    check(filtered not in (None, changed["--top-k"]), "continue: --filter-time-shifts changes the music")


def main():
    with tempfile.TemporaryDirectory() as d:
        test_help()
        test_usage_errors(d)
        test_continue_options(d)
    if fails:
        print(f"{len(fails)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
