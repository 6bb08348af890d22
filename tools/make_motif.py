#!/usr/bin/python3
"""make_motif.py: writes models/motif.mid, the short piano motif `continuo demo` uses.

An original five-bar phrase (A minor, 100 bpm, about 11 s): a melody in the
right hand over broken chords in the left (Am F C G Am), with the sustain
pedal changed at each bar, small deterministic timing and velocity
variations so that it plays like a person.  Format 1: a tempo track, then
one track per hand.  Run: /usr/bin/python3 tools/make_motif.py [OUT.mid]
"""
import random
import sys

import mido

BPM = 100
BEAT = 60.0 / BPM                 # seconds per beat
PPQ = 480
BAR = 4                           # beats per bar

# Right hand: (bar, beat, length in beats, pitch); bar 4 ends on a chord.
MELODY = [
    (0, 0.0, 1.5, 76), (0, 1.5, 0.5, 74), (0, 2.0, 1.0, 72), (0, 3.0, 1.0, 71),
    (1, 0.0, 1.0, 72), (1, 1.0, 0.5, 69), (1, 1.5, 0.5, 72), (1, 2.0, 2.0, 77),
    (2, 0.0, 1.5, 76), (2, 1.5, 0.5, 79), (2, 2.0, 1.0, 76), (2, 3.0, 0.5, 74),
    (2, 3.5, 0.5, 72),
    (3, 0.0, 2.0, 74), (3, 2.0, 1.0, 71), (3, 3.0, 1.0, 68),
    (4, 0.0, 3.0, 69), (4, 0.0, 3.0, 72), (4, 0.0, 3.0, 76),
]
# Left hand: a root per bar, broken upwards and back in eighths.
ROOTS = [45, 41, 48, 40, 45]                          # A2 F2 C3 E2 A2
SHAPES = {45: [0, 7, 12, 15], 41: [0, 7, 12, 16], 48: [0, 7, 12, 16],
          40: [0, 7, 12, 16]}                         # minor / major triads, E major


def seconds(bar, beat):
    return (bar * BAR + beat) * BEAT


def build():
    rnd = random.Random(20261130)
    right, left, pedal = [], [], []
    for bar, beat, length, pitch in MELODY:
        t = seconds(bar, beat) + rnd.uniform(-0.012, 0.012)
        shape = 1.0 - 0.15 * abs(beat - 2.0) / 2.0   # a little louder mid-bar
        vel = int(round(72 * shape + (6 if pitch >= 76 else 0) + rnd.uniform(-4, 4)))
        right.append((t, t + length * BEAT * 0.92, pitch, vel))
    for bar, root in enumerate(ROOTS):
        if bar == len(ROOTS) - 1:                     # last bar: a low open fifth, held
            t = seconds(bar, 0) + 0.01
            left.append((t, t + 3 * BEAT, root - 12, 58))
            left.append((t + 0.02, t + 3 * BEAT, root - 5, 52))
        else:
            iv = SHAPES[root]
            pattern = [iv[0], iv[1], iv[2], iv[3], iv[2], iv[1], iv[2], iv[1]]
            for k, step in enumerate(pattern):
                t = seconds(bar, 0.5 * k) + rnd.uniform(-0.010, 0.010)
                vel = int(round((56 if k == 0 else 46) + rnd.uniform(-4, 4)))
                left.append((t, t + 0.45 * BEAT, root + step, vel))
        # Pedal: down just after the bar's first notes, up just after the next bar starts.
        down = seconds(bar, 0.15)
        up = seconds(bar + 1, 0.04) if bar < len(ROOTS) - 1 else seconds(bar, 3.2)
        pedal.append((down, 127))
        pedal.append((up, 0))
    return right, left, pedal


def ticks(t):
    return max(0, int(round(t / BEAT * PPQ)))


def track(name, notes, controls):
    events = []
    for on, off, pitch, vel in notes:
        events.append((ticks(on), 1, mido.Message('note_on', note=pitch, velocity=vel)))
        events.append((ticks(off), 0, mido.Message('note_off', note=pitch, velocity=64)))
    for t, value in controls:
        events.append((ticks(t), 2, mido.Message('control_change', control=64, value=value)))
    events.sort(key=lambda e: (e[0], e[1]))
    tr = mido.MidiTrack([mido.MetaMessage('track_name', name=name, time=0)])
    now = 0
    for tick, _, msg in events:
        tr.append(msg.copy(time=tick - now))
        now = tick
    tr.append(mido.MetaMessage('end_of_track', time=PPQ // 4))
    return tr


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else 'models/motif.mid'
    right, left, pedal = build()
    mid = mido.MidiFile(type=1, ticks_per_beat=PPQ)
    tempo = mido.MidiTrack([
        mido.MetaMessage('track_name', name='continuo motif', time=0),
        mido.MetaMessage('set_tempo', tempo=mido.bpm2tempo(BPM), time=0),
        mido.MetaMessage('time_signature', numerator=4, denominator=4, time=0),
        mido.MetaMessage('end_of_track', time=0)])
    mid.tracks.append(tempo)
    mid.tracks.append(track('right hand', right, []))
    mid.tracks.append(track('left hand', left, pedal))
    mid.save(out)
    print(f'{out}: {len(right) + len(left)} notes, {mid.length:.2f} s, '
          f'{len(pedal) // 2} pedal presses')


if __name__ == '__main__':
    main()
