#!/usr/bin/env bash
# check_deb.sh SOURCE_DIR: builds the Debian package (packaging/build-deb.sh,
# unit tests left out: the main build runs them), checks it with lintian
# (no error, no warning that is not overridden), installs it with dpkg -i,
# checks the installed binary, manual, completions and Wireshark extcap
# entry (tshark -D lists its interfaces), removes
# it with dpkg -r and checks that nothing is left behind.
# Needs root; exit 77 (skip) without it. Refuses to touch an xdpcap package
# that was installed before the test.
set -uo pipefail
src=$(cd "$1" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (dpkg -i)"; exit 77; }
for tool in dpkg-buildpackage dh lintian man tshark; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool missing (scripts/deps.sh installs it)"; exit 77; }
done

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "  ok    $*"; }

# One package test at a time on this machine (other trees may run theirs).
exec 9>/run/lock/xdpcap-package-test.lock
flock -w 600 9 || fail "another package test holds /run/lock/xdpcap-package-test.lock"
if dpkg-query -W -f='${Status}' xdpcap 2>/dev/null | grep -q 'ok installed'; then
    fail "an xdpcap package is installed already; not replacing it (dpkg -r xdpcap first)"
fi

work=$(mktemp -d)
installed=0
cleanup() {
    [ "$installed" = 1 ] && dpkg -r xdpcap >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

# dpkg waits for nobody: retry while another apt or dpkg holds its lock.
dpkg_retry() {
    local i
    for i in $(seq 60); do
        if dpkg "$@" >"$work/dpkg.log" 2>&1; then return 0; fi
        grep -q 'lock' "$work/dpkg.log" || { cat "$work/dpkg.log"; return 1; }
        sleep 2
    done
    cat "$work/dpkg.log"
    return 1
}

start=$SECONDS
DEB_BUILD_OPTIONS=nocheck "$src/packaging/build-deb.sh" "$work/out" >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; fail "dpkg-buildpackage failed"; }
deb=$(ls "$work"/out/xdpcap_*.deb)
ok "built $(basename "$deb") in $((SECONDS - start)) s"

lintian --fail-on error,warning --display-info "$work"/out/xdpcap_*.changes >"$work/lintian.log" 2>&1
lintian_rc=$?
grep -v '^running with root privileges' "$work/lintian.log" | sed 's/^/        lintian: /'
[ "$lintian_rc" -eq 0 ] || fail "lintian reports errors or warnings"
ok "lintian: no errors, no warnings (overrides in packaging/debian/xdpcap.lintian-overrides)"

depends=$(dpkg-deb -f "$deb" Depends)
for lib in libbpf1 libpcap0.8 libstdc++6; do
    [[ $depends == *"$lib "* || $depends == *"$lib," || $depends == *"$lib" ]] ||
        fail "Depends lacks $lib: $depends"
done
ok "Depends (from \${shlibs:Depends}): $depends"

dpkg_retry -i "$deb" || fail "dpkg -i failed"
installed=1
ok "dpkg -i"

version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$src/meson.build")
[ "$(/usr/sbin/xdpcap --version)" = "xdpcap $version" ] || fail "/usr/sbin/xdpcap --version: $(/usr/sbin/xdpcap --version 2>&1)"
ok "/usr/sbin/xdpcap --version: xdpcap $version"
if readelf -S /usr/sbin/xdpcap | grep -q '\.debug_'; then fail "/usr/sbin/xdpcap has debug sections"; fi
ok "/usr/sbin/xdpcap is stripped ($(stat -c %s /usr/sbin/xdpcap) bytes)"
[ "$(man -w xdpcap)" = /usr/share/man/man8/xdpcap.8.gz ] || fail "man -w xdpcap: $(man -w xdpcap 2>&1)"
ok "man -w xdpcap: /usr/share/man/man8/xdpcap.8.gz"

# bash-completion loads the file on demand, by command name.
values=$(bash --norc --noprofile -c '
    source /usr/share/bash-completion/bash_completion
    _completion_loader xdpcap
    COMP_WORDS=(xdpcap -Q ""); COMP_CWORD=2; COMP_LINE="xdpcap -Q "; COMP_POINT=${#COMP_LINE}
    $(complete -p xdpcap | sed "s/.*-F \([^ ]*\) .*/\1/") xdpcap "" -Q
    echo "${COMPREPLY[*]}"')
[ "$values" = "in inout out" ] || [ "$values" = "in out inout" ] ||
    fail "installed bash completion of 'xdpcap -Q ': '$values'"
ok "bash completion found by bash-completion: 'xdpcap -Q <TAB>' gives $values"
zsh_file=$(zsh -fc 'print -l $^fpath/_xdpcap(N)')
[ "$zsh_file" = /usr/share/zsh/vendor-completions/_xdpcap ] || fail "zsh does not find _xdpcap in its fpath: '$zsh_file'"
ok "zsh finds $zsh_file"

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
entry=/usr/lib/$multiarch/wireshark/extcap/xdpcap
[ "$(readlink -f "$entry")" = /usr/sbin/xdpcap ] || fail "$entry does not lead to /usr/sbin/xdpcap"
"$entry" --extcap-interfaces | grep -qx 'interface {value=xdpcap:lo}{display=.*}' ||
    fail "$entry --extcap-interfaces does not list xdpcap:lo"
home=$(mktemp -d -p "$work")
HOME=$home XDG_CONFIG_HOME=$home tshark -D 2>/dev/null | grep -q '^[0-9]*\. xdpcap:lo ' ||
    fail "tshark -D does not list xdpcap:lo from $entry"
ok "extcap entry $entry -> /usr/sbin/xdpcap; tshark -D lists xdpcap:lo"

files=$(dpkg -L xdpcap)
dpkg_retry -r xdpcap || fail "dpkg -r failed"
installed=0
status=$(dpkg-query -W -f='${db:Status-Abbrev}' xdpcap 2>/dev/null)
[ -z "$status" ] || [ "${status:0:2}" = "un" ] || fail "after dpkg -r the package status is '$status'"
left=()
while read -r f; do
    [ -d "$f" ] && continue
    [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <<<"$files"
[ "${#left[@]}" -eq 0 ] || fail "left behind by dpkg -r: ${left[*]}"
ok "dpkg -r: removed, nothing left behind ($(wc -l <<<"$files") paths checked)"
echo "package test: $((SECONDS - start)) s"
