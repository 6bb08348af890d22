/* stream.c: live MIDI byte-stream parser (being written). */
