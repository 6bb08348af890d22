/* fuzz_smf.c: libFuzzer target for the MIDI file reader: any bytes read cleanly, and a read file keeps its invariants. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "midi/smf.h"

#include "fuzz_quiet.h"  /* quiet stderr under libFuzzer; REQUIRE */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    smf f;

    if (smf_read_mem(data, size, "fuzz", &f) != 0) {
        REQUIRE(f.events == NULL && f.tracks == NULL && f.tempos == NULL && f.warnings == NULL);
        return 0;
    }
    REQUIRE(f.format == 0 || f.format == 1);
    REQUIRE((f.division > 0) != (f.smpte_fps > 0));
    size_t per_track = 0;
    for (int t = 0; t < f.n_tracks; t++)
        per_track += f.tracks[t].n_events;
    REQUIRE(per_track == f.n_events);
    for (size_t i = 0; i < f.n_events; i++) {
        const smf_event *e = &f.events[i];
        REQUIRE(e->status >= 0x80 && e->status < 0xF0 && e->data1 < 0x80 && e->data2 < 0x80);
        REQUIRE(e->track < f.n_tracks);
        REQUIRE(isfinite(e->time) && e->time >= 0.0 && e->time <= f.duration);
        REQUIRE(e->tick <= f.tracks[e->track].end_tick);
        if (i > 0)
            REQUIRE(e->time >= f.events[i - 1].time && e->tick >= f.events[i - 1].tick);
    }
    for (size_t i = 1; i < f.n_tempos; i++)
        REQUIRE(f.tempos[i].tick > f.tempos[i - 1].tick && f.tempos[i].time >= f.tempos[i - 1].time);
    REQUIRE(f.n_warnings == 0 || f.warnings != NULL);
    smf_free(&f);
    return 0;
}
