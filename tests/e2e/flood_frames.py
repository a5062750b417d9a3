#!/usr/bin/python3
"""Send the frames of a classic pcap file in a loop, as fast as possible.

Run inside the generator namespace:

    ip netns exec GENNS /usr/bin/python3 flood_frames.py --iface gen0 --cpu N \
        --pcap FILE (--seconds S | --rounds R)

Like send_frames.py (whose pcap reader it reuses) but bounded by time or by a
number of passes over the file instead of one pass: the load generator of the
fault and soak tests.  Pinned to CPU N, so the frames are seen by XDP on CPU N
of the peer.  SIGTERM/SIGINT end the loop early (cleanly).  At the end it
prints "flood_frames: sent K frames ..." on stderr, K being the number of
successful send() calls (what the peer can have received at most). Once set
up, just before the first frame, it prints "flood_frames: sending" on
stdout.
"""

import argparse
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from send_frames import read_pcap  # noqa: E402

_stop = False


def _on_signal(_signum, _frame):
    global _stop
    _stop = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--cpu", type=int, required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--rounds", type=int, default=None)
    args = ap.parse_args()
    if (args.seconds is None) == (args.rounds is None):
        print("flood_frames: give exactly one of --seconds, --rounds", file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _on_signal)

    os.sched_setaffinity(0, {args.cpu})
    if os.sched_getaffinity(0) != {args.cpu}:
        print(f"flood_frames: could not pin to CPU {args.cpu}", file=sys.stderr)
        return 1
    frames = read_pcap(args.pcap)
    if not frames:
        print("flood_frames: empty pcap", file=sys.stderr)
        return 1
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((args.iface, 0))
    # The caller waits for this line: from here on a signal ends the flood
    # cleanly, with its count.
    print("flood_frames: sending", flush=True)
    send = s.send
    sent = 0
    failed = 0
    rounds = 0
    t0 = time.monotonic()
    end = t0 + args.seconds if args.seconds is not None else None
    while not _stop:
        if args.rounds is not None and rounds >= args.rounds:
            break
        if end is not None and time.monotonic() >= end:
            break
        for frame in frames:
            try:
                if send(frame) == len(frame):
                    sent += 1
                else:
                    failed += 1
            except OSError:          # e.g. ENOBUFS under pressure: not sent
                failed += 1
        rounds += 1
    elapsed = time.monotonic() - t0
    s.close()
    print(f"flood_frames: sent {sent} frames ({failed} failed) on {args.iface} from CPU "
          f"{args.cpu} in {elapsed:.2f} s ({sent / max(elapsed, 1e-9):.0f}/s), {rounds} rounds",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
