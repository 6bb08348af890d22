# console.sh: sourced by run-guest.sh and debian-guest.sh.
# guest_exit NAME RAW_LOG QEMU_STATUS LIMIT: prints the guest's console (\r
# stripped) and exits with the status the guest printed as
# CONTINUO-QEMU-EXIT=N, 124 when qemu timed out, 125 when the guest stopped
# without the marker.
guest_exit() {
    tr -d '\r' < "$2" > "$2.txt"
    cat "$2.txt"
    marker=$(sed -n 's/^CONTINUO-QEMU-EXIT=\([0-9]*\)$/\1/p' "$2.txt" | tail -n 1)
    if [ -n "$marker" ]; then
        exit "$marker"
    fi
    if [ "$3" = 124 ]; then
        echo "$1: the guest did not finish within ${4}s"
        exit 124
    fi
    echo "$1: the guest stopped without an exit marker (qemu status $3)"
    exit 125
}
