"""plot.py: the loss-curve picture of a training run (train loss and validation NLL)."""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt   # noqa: E402


def plot_history(history: dict, path: str, title: str = "") -> None:
    """Writes PATH (PNG): nats per event against training events, for the
    training loss (history["train"]: (step, events, loss)) and the validation
    NLL (history["valid"]: (step, events, nll[, "valid" or "subset"])).
    Written atomically."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    if history.get("train"):
        _, ev, y = zip(*history["train"])
        ax.plot([e / 1e6 for e in ev], y, lw=1, label="train loss")
    valid = [tuple(v) + ("valid",) * (4 - len(v)) for v in history.get("valid", [])]
    for kind, label, style in (("subset", "valid NLL (first sequences)", "s--"),
                               ("valid", "valid NLL (whole split)", "o-")):
        pts = [v for v in valid if v[3] == kind]
        if not pts:
            continue
        _, ev, y, _ = zip(*pts)
        ax.plot([e / 1e6 for e in ev], y, style, ms=4, label=label)
        ax.annotate(f"{y[-1]:.3f}", (ev[-1] / 1e6, y[-1]), textcoords="offset points",
                    xytext=(4, 6), fontsize=8)
    ax.set_xlabel("training events (millions)")
    ax.set_ylabel("nats per event")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)


if __name__ == "__main__":
    # plot.py CHECKPOINT.pt OUT.png: redraw a run's curve from its checkpoint.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from checkpoint import load_checkpoint
    ck = load_checkpoint(sys.argv[1])
    plot_history(ck["history"], sys.argv[2], ck["config"].get("name", ""))
