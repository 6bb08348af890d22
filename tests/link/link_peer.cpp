// link_peer.cpp: a real Ableton Link peer for the tests (the same library
// as continuo's, not a mock), driven by lines on stdin, answering on stdout.
//
//   link_peer QUANTUM [FIFO]
//
// Commands (one per line; each answered by one line "ok ..." or "error ..."):
//   tempo BPM        propose BPM to the session
//   start | stop     start or stop the session (start/stop sync is on)
//   state            "ok peers=N tempo=T beat=B phase=P playing=0|1 now=US"
//   wait_peers N S   until N peers are seen, at most S seconds
//   listen           start a second Link instance in this process, an ear
//                    on the network: it joins the session with start/stop
//                    sync on, and prints "heard start US" or "heard stop US"
//                    (its Link clock, the same as the peer's) whenever the
//                    session's start/stop state reaches it.  Link sends a
//                    node's state at most once per 50 ms (discovery's
//                    UdpMessenger), so a stop can leave up to 50 ms after
//                    it was committed; the ear hears it when continuo can.
//   quit
// With FIFO, the peer makes the FIFO, reads raw MIDI bytes from it (what
// continuo's fifo: output writes) and prints one line per message, stamped
// with its own Link clock on arrival:
//   midi US BEAT PHASE STATUS DATA1 DATA2
// and once at the end "jitter US": the largest delay it measured between
// asking to be woken and being woken (the peer's own scheduling noise).
#include <ableton/Link.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace {

std::mutex out_lock;

void say(const std::string &line)
{
    std::lock_guard<std::mutex> g(out_lock);
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

// Reads FIFO until its writer closes it, a message per line.
void record(ableton::Link &link, double quantum, const std::string &path, std::atomic<bool> &quit,
            std::atomic<long> &jitter_us)
{
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        say("error cannot open " + path);
        return;
    }
    unsigned char msg[3];
    int have = 0, need = 0;
    while (!quit) {
        pollfd p = { fd, POLLIN, 0 };
        auto asked = link.clock().micros();
        int r = poll(&p, 1, 2);
        auto woke = link.clock().micros();
        if (r == 0) {
            long late = static_cast<long>((woke - asked).count()) - 2000;
            if (late > jitter_us)
                jitter_us = late;
            continue;
        }
        unsigned char buf[256];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) {
            if (n == 0)
                usleep(1000);           // no writer (yet, or any more)
            continue;
        }
        auto t = link.clock().micros();
        auto state = link.captureAppSessionState();
        for (ssize_t i = 0; i < n; i++) {
            unsigned char b = buf[i];
            if (b & 0x80) {
                if (b >= 0xF8)
                    continue;           // real-time: not a note
                msg[0] = b;
                have = 1;
                need = (b & 0xF0) == 0xC0 || (b & 0xF0) == 0xD0 ? 2 : 3;
                continue;
            }
            if (have == 0)
                continue;
            msg[have++] = b;
            if (have == need) {
                char line[160];
                std::snprintf(line, sizeof line, "midi %lld %.6f %.6f %d %d %d",
                              static_cast<long long>(t.count()), state.beatAtTime(t, quantum),
                              state.phaseAtTime(t, quantum), msg[0], msg[1], need == 3 ? msg[2] : 0);
                say(line);
                have = 1;               // running status
            }
        }
    }
    close(fd);
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: link_peer QUANTUM [FIFO]\n");
        return 2;
    }
    double quantum = std::atof(argv[1]);
    ableton::Link link(120.0);
    link.enableStartStopSync(true);
    link.enable(true);
    std::atomic<bool> quit{false};
    std::atomic<long> jitter_us{0};
    std::thread rec;
    std::unique_ptr<ableton::Link> ear;
    if (argc > 2) {
        std::string path = argv[2];
        unlink(path.c_str());
        if (mkfifo(path.c_str(), 0600) != 0) {
            say("error cannot make the FIFO " + path);
            return 1;
        }
        rec = std::thread(record, std::ref(link), quantum, path, std::ref(quit), std::ref(jitter_us));
    }
    say("ok ready");
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        auto now = link.clock().micros();
        if (cmd == "tempo") {
            double bpm = 0;
            in >> bpm;
            auto s = link.captureAppSessionState();
            s.setTempo(bpm, now);
            link.commitAppSessionState(s);
            say("ok tempo " + std::to_string(bpm) + " at " + std::to_string(now.count()));
        } else if (cmd == "start" || cmd == "stop") {
            auto s = link.captureAppSessionState();
            if (cmd == "start")
                s.setIsPlayingAndRequestBeatAtTime(true, now, 0.0, quantum);
            else
                s.setIsPlaying(false, now);
            link.commitAppSessionState(s);
            say("ok " + cmd + " at " + std::to_string(now.count()));
        } else if (cmd == "state") {
            auto s = link.captureAppSessionState();
            char buf[200];
            std::snprintf(buf, sizeof buf, "ok peers=%zu tempo=%.4f beat=%.6f phase=%.6f playing=%d now=%lld",
                          link.numPeers(), s.tempo(), s.beatAtTime(now, quantum), s.phaseAtTime(now, quantum),
                          s.isPlaying() ? 1 : 0, static_cast<long long>(now.count()));
            say(buf);
        } else if (cmd == "wait_peers") {
            std::size_t n = 1;
            double secs = 5;
            in >> n >> secs;
            auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
            while (link.numPeers() < n && std::chrono::steady_clock::now() < until)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            say(link.numPeers() >= n ? "ok peers " + std::to_string(link.numPeers())
                                     : "error " + std::to_string(link.numPeers()) + " peers");
        } else if (cmd == "listen") {
            if (!ear) {
                ear.reset(new ableton::Link(120.0));
                ableton::Link *e = ear.get();
                e->enableStartStopSync(true);
                e->setStartStopCallback([e](bool playing) {
                    say(std::string("heard ") + (playing ? "start " : "stop ") +
                        std::to_string(e->clock().micros().count()));
                });
                e->enable(true);
            }
            say("ok listening");
        } else if (cmd == "quit") {
            break;
        } else if (!cmd.empty()) {
            say("error unknown command " + cmd);
        }
    }
    quit = true;
    if (rec.joinable())
        rec.join();
    say("jitter " + std::to_string(jitter_us.load()));
    if (ear)
        ear->enable(false);
    link.enable(false);
    return 0;
}
