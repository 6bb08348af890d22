#!/usr/bin/python3
"""test_cli.py: `continuo encode`, `decode` and `demo` from the outside: token files read with
the numpy snippet of docs/TOKENS.md, decoded MIDI read with mido, bad input handled cleanly."""
import os
import re
import subprocess
import sys
import tempfile

import mido

CONTINUO = os.environ['CONTINUO']
SRC = os.environ['CONTINUO_SRC']
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what, file=sys.stderr)


def run(*args, cwd=None, env=None):
    p = subprocess.run([CONTINUO, *args], capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


def load_doc_reader():
    """The numpy reader exactly as docs/TOKENS.md shows it."""
    doc = open(os.path.join(SRC, 'docs', 'TOKENS.md')).read()
    m = re.search(r'```python\n(.*?)```', doc, re.S)
    ns = {}
    exec(m.group(1), ns)
    return ns['read_tokens']


def mt310(name):
    kind, value = re.match(r'(\w+)\((\d+)\)', name).groups()
    value = int(value)
    return {'NOTE_ON': 2 + value - 21, 'NOTE_OFF': 90 + value - 21,
            'TIME_SHIFT': 177 + value, 'VELOCITY': 278 + value}[kind]


def ids(text):
    return [mt310(w) for w in text.split()]


def write_midi(path):
    """Two notes and a pedal press at 120 bpm (480 ticks = 0.5 s)."""
    mid = mido.MidiFile(type=0, ticks_per_beat=480)
    tr = mido.MidiTrack()
    tr.append(mido.MetaMessage('set_tempo', tempo=500000, time=0))
    tr.append(mido.Message('note_on', note=60, velocity=80, time=0))
    tr.append(mido.Message('control_change', control=64, value=127, time=240))   # 0.25 s
    tr.append(mido.Message('note_off', note=60, velocity=0, time=240))           # 0.5 s
    tr.append(mido.Message('note_on', note=64, velocity=40, time=240))           # 0.75 s
    tr.append(mido.Message('control_change', control=64, value=0, time=240))     # 1.0 s
    tr.append(mido.Message('note_on', note=64, velocity=0, time=240))            # 1.25 s
    tr.append(mido.MetaMessage('end_of_track', time=0))
    mid.tracks.append(tr)
    mid.save(path)


def midi_notes(path):
    """(pitch, onset, release, velocity) from a MIDI file, via mido, times
    rounded to 0.1 ms, sorted by onset then pitch."""
    notes = [(p, round(on, 4), round(off, 4), vel) for p, on, off, vel in midi_notes_raw(path)]
    return sorted(notes, key=lambda n: (n[1], n[0]))


def folded_notes(path):
    """Notes of a MIDI file with the sustain pedal folded in, written
    independently of the C code (mido reads the file): REFERENCE.md's rules."""
    t, pedal, held, sustained, onsets, notes = 0.0, False, set(), set(), {}, []

    def end(p, when):
        on, vel = onsets.pop(p)
        notes.append((p, on, when, vel))
        held.discard(p)
        sustained.discard(p)
    for msg in mido.MidiFile(path):
        t += msg.time
        if msg.type == 'note_on' and msg.velocity > 0:
            if msg.note in onsets:
                end(msg.note, t)
            onsets[msg.note] = (t, msg.velocity)
            held.add(msg.note)
        elif msg.type in ('note_on', 'note_off'):
            if msg.note in held:
                if pedal:
                    held.discard(msg.note)
                    sustained.add(msg.note)
                else:
                    end(msg.note, t)
        elif msg.type == 'control_change' and msg.control == 64:
            if pedal and msg.value < 64:
                for p in list(sustained):
                    end(p, t)
            pedal = msg.value >= 64
    for p in list(onsets):
        end(p, t)
    return notes


def check_corpus_file(path, d):
    """encode + decode through the command line, compared with mido's view of the original."""
    tok, mid = os.path.join(d, 'c.tok'), os.path.join(d, 'c.mid')
    rc, so, se = run('encode', path, '-o', tok)
    rc2, so2, se2 = run('decode', tok, '-o', mid, '--max-note-seconds', '1000')
    check(rc == 0 and rc2 == 0, f'{path}: encode/decode: {se} {se2}')
    ref = folded_notes(path)
    got = {}
    for p, on, off, vel in midi_notes_raw(mid):
        got.setdefault(p, []).append((on, off, vel))
    bad = 0
    for p, on, off, vel in ref:
        cands = [g for g in got.get(p, []) if abs(g[0] - on) <= 0.0101]
        if not cands:
            bad += 1
            continue
        g = min(cands, key=lambda g: abs(g[0] - on))
        got[p].remove(g)
        limit = 0.0151 if off - on < 0.010 else 0.0101
        if abs(g[1] - off) > limit or (g[2] - 1) // 4 != (vel - 1) // 4:
            bad += 1
    extra = sum(len(v) for v in got.values())
    check(bad == 0 and extra == 0, f'{path}: {bad} notes not brought back, {extra} extra')
    print(f'{os.path.basename(path)}: {len(ref)} notes (mido, pedal folded in Python) '
          f'round-trip through encode/decode: {bad} bad, {extra} extra')


def midi_notes_raw(path):
    """(pitch, onset, release, velocity) from a MIDI file, via mido, in order of release."""
    t, sounding, notes = 0.0, {}, []
    for msg in mido.MidiFile(path):
        t += msg.time
        if msg.type == 'note_on' and msg.velocity > 0:
            sounding[msg.note] = (t, msg.velocity)
        elif msg.type in ('note_off', 'note_on') and msg.note in sounding:
            on, vel = sounding.pop(msg.note)
            notes.append((msg.note, on, t, vel))
    return notes


def main():
    read_tokens = load_doc_reader()
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, 'good.mid')
        write_midi(good)
        bad = os.path.join(d, 'bad.mid')
        with open(bad, 'wb') as f:
            f.write(b'MThd\x00\x00\x00\x06\x00\x01\x00\x01\x01\xe0MTrk\x00\x00\x00\x40\x00\x90')
        out = os.path.join(d, 'out.tok')

        # --help everywhere
        for cmd in ('encode', 'decode', 'demo'):
            rc, so, _ = run(cmd, '--help')
            check(rc == 0 and 'usage: continuo ' + cmd in so, f'{cmd} --help')
        rc, _, se = run('encode', good)
        check(rc == 2 and '-o' in se, 'encode without -o is a usage error')
        rc, _, se = run('encode', good, '-o', out, '--vocab', 'nope')
        check(rc == 2 and 'nope' in se, 'unknown vocabulary is a usage error')
        rc, _, se = run('encode', good, '-o', out, '--stretch', 'abc')
        check(rc == 2 and '--stretch' in se, 'bad --stretch is a usage error')

        # encode: pedal folded, velocities binned, read back with the documented reader
        rc, so, se = run('encode', good, '-o', out)
        check(rc == 0, f'encode good file: {se}')
        check(re.search(r'encoded 1 file .*: 2 notes, 9 events', so) is not None, f'summary: {so}')
        name, size, seqs, sources = read_tokens(out)
        check((name, size, sources) == ('mt310', 310, [good]), f'header: {name} {size} {sources}')
        expect = ids('VELOCITY(19) NOTE_ON(60) TIME_SHIFT(75) VELOCITY(9) NOTE_ON(64) '
                     'TIME_SHIFT(25) NOTE_OFF(60) TIME_SHIFT(25) NOTE_OFF(64)')
        check(seqs[0].tolist() == expect, f'encoded ids {seqs[0].tolist()} != {expect}')

        # stretch and transpose, several inputs, EOS
        rc, so, se = run('encode', good, good, '-o', out, '--stretch', '2', '--transpose', '2', '--eos')
        check(rc == 0, f'encode with augmentation: {se}')
        name, size, seqs, sources = read_tokens(out)
        expect = ids('VELOCITY(19) NOTE_ON(62) TIME_SHIFT(100) TIME_SHIFT(50) VELOCITY(9) '
                     'NOTE_ON(66) TIME_SHIFT(50) NOTE_OFF(62) TIME_SHIFT(50) NOTE_OFF(66)') + [1]
        check(len(seqs) == 2 and all(s.tolist() == expect for s in seqs),
              f'stretched/transposed ids {[s.tolist() for s in seqs]}')
        rc, so, se = run('encode', good, '-o', out, '--transpose', '50')
        check(rc == 0 and '2 out of range' in so, f'notes pushed out of range are counted: {so}')

        # a list file and a split file
        lst = os.path.join(d, 'files.txt')
        with open(lst, 'w') as f:
            f.write(f'# inputs\n{good}\n\n{good}\n')
        rc, so, se = run('encode', '--list', lst, '-o', out)
        check(rc == 0 and len(read_tokens(out)[2]) == 2, f'--list: {so} {se}')
        tsv = os.path.join(d, 'split.tsv')
        with open(tsv, 'w') as f:
            f.write('split\tcomposer\ttitle\tfile\ntrain\tMe\tA\tgood.mid\nvalid\tMe\tB\tgood.mid\n'
                    'train\tMe\tC\tgood.mid\n')
        rc, so, se = run('encode', '--split-file', tsv, '--split', 'train', '-o', out)
        name, size, seqs, sources = read_tokens(out)
        check(rc == 0 and sources == ['good.mid', 'good.mid'], f'--split-file: {sources} {se}')
        rc, so, se = run('encode', '--split-file', tsv, '--split', 'test', '-o', out)
        check(rc == 1 and 'test' in se, f'unknown split: {se}')

        # a bad MIDI file: exit 1 naming it, no output file, no temp file left
        os.remove(out)
        rc, so, se = run('encode', good, bad, '-o', out)
        check(rc == 1, 'bad MIDI file: exit 1')
        check(bad in se, f'bad MIDI file named in the error: {se}')
        check(not os.path.exists(out), 'bad MIDI file: no output file')
        check(not [f for f in os.listdir(d) if '.tmp' in f], 'bad MIDI file: no temp file left')
        rc, so, se = run('encode', good, os.path.join(d, 'missing.mid'), '-o', out)
        check(rc == 1 and 'missing.mid' in se and not os.path.exists(out), 'missing input')
        # ... with --skip-bad: warned, skipped, the rest written
        rc, so, se = run('encode', good, bad, '-o', out, '--skip-bad')
        check(rc == 0 and bad in se and 'skipped 1 bad file' in so, f'--skip-bad: {so} {se}')
        check(os.path.exists(out) and len(read_tokens(out)[2]) == 1, '--skip-bad writes the good one')

        # decode: back to MIDI, read by mido
        run('encode', good, '-o', out)
        mid = os.path.join(d, 'back.mid')
        rc, so, se = run('decode', out, '-o', mid)
        check(rc == 0, f'decode: {se}')
        check(midi_notes(mid) == [(60, 0.0, 1.0, 77), (64, 0.75, 1.25, 37)],
              f'decoded notes: {midi_notes(mid)}')
        rc, so, se = run('decode', out, '--index', '1', '-o', mid + '2')
        check(rc == 1 and 'no sequence 1' in se and not os.path.exists(mid + '2'), '--index past the end')

        # decode a hand-written text file (names, numbers, comments)
        txt = os.path.join(d, 'hand.txt')
        with open(txt, 'w') as f:
            f.write('# triad\nVELOCITY(20) NOTE_ON(60) 45, NOTE_ON(67) TIME_SHIFT(50)\n'
                    'note_off(60) NOTE_OFF( 67 ) TIME_SHIFT(50) NOTE_OFF(64) NOTE_OFF(64)\n')
        rc, so, se = run('decode', txt, '-o', mid)
        check(rc == 0, f'decode text: {se}')
        check(midi_notes(mid) == [(60, 0.0, 0.5, 81), (64, 0.0, 1.0, 81), (67, 0.0, 0.5, 81)],
              f'text decoded: {midi_notes(mid)}')
        # a note never released is cut at --max-note-seconds
        with open(txt, 'w') as f:
            f.write('NOTE_ON(60) ' + 'TIME_SHIFT(100) ' * 5)
        rc, so, se = run('decode', txt, '-o', mid, '--max-note-seconds', '2')
        check(rc == 0 and midi_notes(mid) == [(60, 0.0, 2.0, 100)], f'capped: {midi_notes(mid)}')
        # bad text: file and line named, nothing written
        os.remove(mid)
        with open(txt, 'w') as f:
            f.write('NOTE_ON(60)\nNOTE_ON(200)\n')
        rc, so, se = run('decode', txt, '-o', mid)
        check(rc == 1 and f'{txt}:2:' in se and not os.path.exists(mid), f'bad text: {se}')

        # corrupted token files: byte offset named, nothing written
        raw = open(out, 'rb').read()
        for what, data in (('truncated', raw[:-3]), ('bad id', raw[:48 + 8] + b'\xff\xff' + raw[58:])):
            with open(os.path.join(d, 'c.tok'), 'wb') as f:
                f.write(data)
            rc, so, se = run('decode', os.path.join(d, 'c.tok'), '-o', mid)
            check(rc == 1 and re.search(r'c\.tok: byte \d+', se) and not os.path.exists(mid),
                  f'corrupted token file ({what}): {se}')

        # demo: finds the bundled motif, round trip complete, MIDI written
        env = dict(os.environ, CONTINUO_DATADIR=os.path.join(SRC, 'models'))
        rc, so, se = run('demo', cwd=d, env=env)
        check(rc == 0, f'demo: {se}')
        m = re.search(r'round trip: (\d+) of (\d+) notes matched', so)
        check(m is not None and m.group(1) == m.group(2) and int(m.group(1)) > 20,
              f'demo round trip: {so[-400:]}')
        demo_mid = os.path.join(d, 'continuo-demo.mid')
        check(os.path.exists(demo_mid) and len(midi_notes(demo_mid)) == int(m.group(1) if m else -1),
              'demo MIDI file has every note')
        check('NOTE_ON(' in so and 'TIME_SHIFT(' in so, 'demo prints events by name')
        # ... and says where it looked when there is none (a copy of the program
        # outside the source tree, run from an empty folder)
        import shutil
        lone = os.path.join(d, 'lone')
        os.mkdir(lone)
        shutil.copy(CONTINUO, os.path.join(lone, 'continuo'))
        env['CONTINUO_DATADIR'] = lone
        p = subprocess.run([os.path.join(lone, 'continuo'), 'demo'], capture_output=True,
                           text=True, cwd=lone, env=env, timeout=60)
        if p.returncode != 0:
            check(p.returncode == 1 and 'cannot find the bundled motif' in p.stderr
                  and lone in p.stderr, f'demo without a motif: {p.stderr}')
        else:   # an installed copy was found in the compiled-in data folder
            check('motif: ' in p.stdout and lone not in p.stdout.split('\n')[0], 'installed motif')

        # two real performances, checked against an independent reading
        asap = os.environ.get('ASAP_DIR', '')
        split = os.path.join(asap, 'split.tsv')
        if os.path.exists(split):
            rows = [line.split('\t') for line in open(split).read().splitlines()[1:]]
            for row in (rows[0], rows[-1]):
                check_corpus_file(os.path.join(asap, row[3]), d)
        else:
            print('no ASAP_DIR: corpus files not checked')

    if failures:
        print(f'{len(failures)} check(s) failed', file=sys.stderr)
        return 1
    print('all CLI checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
