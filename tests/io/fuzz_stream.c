/* fuzz_stream.c: libFuzzer target for the live MIDI byte parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "midi/stream.h"

/* Every message the parser returns must be well formed, and feeding byte by
 * byte must give the same messages as feeding in chunks. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    midi_stream a, b;
    midi_stream_init(&a);
    midi_stream_init(&b);
    midi_msg chunk[7];
    size_t pos = 0, n_b = 0;
    for (size_t i = 0; i < size; i++) {
        midi_msg m;
        if (!midi_stream_feed(&a, data[i], &m))
            continue;
        uint8_t buf[3];
        if (midi_msg_encode(&m, buf) != m.length)
            abort();
        /* the chunked parser must have produced the same message */
        while (n_b == 0 && pos < size) {
            size_t used = 0;
            n_b = midi_stream_parse(&b, data + pos, size - pos, chunk, 1, &used);
            pos += used;
        }
        if (n_b != 1 || chunk[0].status != m.status || chunk[0].data1 != m.data1 ||
            chunk[0].data2 != m.data2 || chunk[0].length != m.length)
            abort();
        n_b = 0;
    }
    if (a.stats.messages + a.stats.junk > size)
        abort();
    return 0;
}
