/* smf.c: Standard MIDI File reader and writer (being written). */
