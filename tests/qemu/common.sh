# common.sh: sourced by run-guest.sh, debian-guest.sh and accel.sh.
#
# qemu_cache DIR      the guest cache: DIR if given, else $CONTINUO_QEMU_CACHE,
#                     else /var/cache/continuo-qemu when it can be written,
#                     else $TMPDIR/continuo-qemu (printed)
# static_busybox      prints the path of a statically linked busybox (the
#                     guests' and the probe's init), or fails
# qemu_accel NAME CACHE KERNEL
#                     runs accel.sh once for this test run and sets ACCEL
#                     (kvm or tcg) and ACCEL_ARGS, the qemu options that go
#                     with it; exits 77 (skip) with the reason when no guest
#                     boots here at all
# qemu_limit NAME KVM_S TCG_S
#                     sets LIMIT to the time a guest may take with ACCEL
# guest_exit NAME RAW_LOG QEMU_STATUS LIMIT
#                     prints the guest's console (\r stripped) and exits
#                     with the status the guest printed as
#                     CONTINUO-QEMU-EXIT=N, 124 when qemu timed out, 125
#                     when the guest stopped without the marker

qemu_cache() {
    if [ -n "${1:-}" ]; then
        echo "$1"
    elif [ -n "${CONTINUO_QEMU_CACHE:-}" ]; then
        echo "$CONTINUO_QEMU_CACHE"
    elif mkdir -p /var/cache/continuo-qemu 2>/dev/null && [ -w /var/cache/continuo-qemu ]; then
        echo /var/cache/continuo-qemu
    else
        echo "${TMPDIR:-/tmp}/continuo-qemu"
    fi
}

static_busybox() {
    for b in "$(command -v busybox || true)" /bin/busybox; do
        [ -x "$b" ] && ldd "$b" 2>&1 | grep -q 'not a dynamic executable\|statically linked' &&
            { echo "$b"; return 0; }
    done
    return 1
}

# The options of each accelerator: the probe boots with exactly these.
accel_args() {
    case $1 in
    kvm) echo "-accel kvm -cpu max -smp 2";;
    tcg) echo "-accel tcg,thread=multi -cpu max -smp 2";;
    esac
}

qemu_accel() {
    _rc=0
    ACCEL=$("$here/accel.sh" -k "$2" "$3") || _rc=$?
    if [ "$_rc" = 77 ]; then
        echo "$1: SKIP: no qemu guest boots on this machine (see the accel.sh lines above)"
        exit 77
    fi
    [ "$_rc" = 0 ] || exit "$_rc"
    ACCEL_ARGS=$(accel_args "$ACCEL")
}

qemu_limit() {
    case $ACCEL in
    kvm) LIMIT=$2;;
    *) LIMIT=$3;;
    esac
    echo "$1: accelerator $ACCEL, the guest may take ${LIMIT}s"
}

guest_exit() {
    tr -d '\r' < "$2" > "$2.txt"
    cat "$2.txt"
    marker=$(sed -n 's/^CONTINUO-QEMU-EXIT=\([0-9]*\)$/\1/p' "$2.txt" | tail -n 1)
    if [ -n "$marker" ]; then
        exit "$marker"
    fi
    if [ "$3" = 124 ]; then
        echo "$1: the guest did not finish within ${4}s (accelerator ${ACCEL:-?})"
        exit 124
    fi
    echo "$1: the guest stopped without an exit marker (qemu status $3, accelerator ${ACCEL:-?})"
    exit 125
}
