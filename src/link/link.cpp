/* link.cpp: Ableton Link behind a C interface: the session state read and written with the library's real-time calls, its clock mapped to CLOCK_MONOTONIC at every call. */
#include "link/link.h"

#include <ableton/Link.hpp>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <exception>

#include <unistd.h>

extern "C" {
#include "util/log.h"
}

namespace {

// From Link's thread: the loop reads the state again.  An eventfd write
// of 1 never blocks (EFD_NONBLOCK; the counter cannot fill in practice).
void wake(int fd)
{
    std::uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof one);
    (void)n;
}

}  // namespace

struct link_session {
    ableton::Link link;
    link_session(double bpm, int wake_fd) : link(bpm)
    {
        link.setNumPeersCallback([wake_fd](std::size_t) { wake(wake_fd); });
        link.setTempoCallback([wake_fd](double) { wake(wake_fd); });
        link.setStartStopCallback([wake_fd](bool) { wake(wake_fd); });
    }
};

namespace {

std::int64_t clock_ns(clockid_t id)
{
    timespec ts;
    clock_gettime(id, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// CLOCK_MONOTONIC minus Link's clock, now: Link's read between two reads
// of ours, the offset taken at their middle.
std::int64_t offset_ns(const ableton::Link &link)
{
    std::int64_t a = clock_ns(CLOCK_MONOTONIC);
    std::int64_t l = static_cast<std::int64_t>(link.clock().micros().count()) * 1000;
    std::int64_t b = clock_ns(CLOCK_MONOTONIC);
    return a + (b - a) / 2 - l;
}

std::chrono::microseconds to_link(const ableton::Link &link, std::int64_t mono_ns)
{
    return std::chrono::microseconds((mono_ns - offset_ns(link)) / 1000);
}

}  // namespace

extern "C" {

link_session *link_new(double bpm, int wake_fd)
{
    link_session *l = nullptr;
    try {
        l = new link_session(bpm, wake_fd);
    } catch (const std::exception &e) {
        log_error("cannot start Ableton Link: %s", e.what());
        return nullptr;
    }
    return l;
}

void link_free(link_session *l)
{
    if (l) {
        l->link.enable(false);
        delete l;
    }
}

int link_join(link_session *l, int on)
{
    try {
        l->link.enable(on != 0);
    } catch (const std::exception &e) {
        log_error("Ableton Link: cannot %s the session: %s", on ? "join" : "leave", e.what());
        return -1;
    }
    return 0;
}

int link_joined(const link_session *l)
{
    return l->link.isEnabled();
}

void link_start_stop_sync(link_session *l, int on)
{
    l->link.enableStartStopSync(on != 0);
}

void link_read(link_session *l, double quantum, std::int64_t now_ns, link_state *out)
{
    auto state = l->link.captureAudioSessionState();
    auto t = to_link(l->link, now_ns);
    out->tempo = state.tempo();
    out->beat = state.beatAtTime(t, quantum);
    out->phase = state.phaseAtTime(t, quantum);
    out->playing = state.isPlaying();
    out->peers = static_cast<unsigned>(l->link.numPeers());
    out->now_ns = now_ns;
}

std::int64_t link_time_at_beat(link_session *l, double beat, double quantum)
{
    auto state = l->link.captureAudioSessionState();
    auto t = state.timeAtBeat(beat, quantum);
    return static_cast<std::int64_t>(t.count()) * 1000 + offset_ns(l->link);
}

void link_set_tempo(link_session *l, double bpm)
{
    auto state = l->link.captureAudioSessionState();
    state.setTempo(bpm, l->link.clock().micros());
    l->link.commitAudioSessionState(state);
}

void link_set_playing(link_session *l, int playing)
{
    auto state = l->link.captureAudioSessionState();
    state.setIsPlaying(playing != 0, l->link.clock().micros());
    l->link.commitAudioSessionState(state);
}

}  // extern "C"
