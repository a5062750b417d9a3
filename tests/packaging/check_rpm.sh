#!/usr/bin/env bash
# check_rpm.sh SOURCE_DIR: rpmbuild -bb accepts packaging/rpm/xdpcap.spec on
# this Debian machine. The build dependencies are Debian packages here, which
# rpm's own (empty) database does not know, hence --nodeps; %check is left
# out (--nocheck) because the main build runs the unit tests. Checks the
# package's version, files and library requirements.
set -uo pipefail
src=$(cd "$1" && pwd)
command -v rpmbuild >/dev/null || { echo "SKIP: rpmbuild missing (package rpm; scripts/deps.sh installs it)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "  ok    $*"; }

spec=$src/packaging/rpm/xdpcap.spec
version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$src/meson.build")
spec_version=$(sed -n 's/^Version: *//p' "$spec")
[ "$spec_version" = "$version" ] || fail "spec Version $spec_version, meson.build $version"
ok "spec version $version, as in meson.build"

top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
mkdir -p "$top/SOURCES"
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
    tar --null -T - --transform "s,^,xdpcap-$version/," -czf "$top/SOURCES/xdpcap-$version.tar.gz") ||
    fail "cannot make the source tarball"
start=$SECONDS
rpmbuild -bb --nodeps --nocheck --define "_topdir $top" "$spec" >"$top/build.log" 2>&1 ||
    { tail -40 "$top/build.log"; fail "rpmbuild -bb failed"; }
rpm=$(ls "$top"/RPMS/*/xdpcap-"$version"-*.rpm)
ok "rpmbuild -bb: $(basename "$rpm") in $((SECONDS - start)) s"

files=$(rpm -qlp "$rpm")
for f in /usr/sbin/xdpcap /usr/share/bash-completion/completions/xdpcap /usr/share/zsh/site-functions/_xdpcap \
         "/usr/share/licenses/xdpcap-$version/LICENSE"; do
    grep -qx "$f" <<<"$files" || fail "$f missing from the rpm: $files"
done
grep -q '^/usr/share/man/man8/xdpcap\.8' <<<"$files" || fail "man page missing from the rpm"
libdir=$(rpm --eval '%{_libdir}')
grep -qx "$libdir/wireshark/extcap/xdpcap" <<<"$files" || fail "extcap entry missing from the rpm"
ok "files: binary, manual, completions, licence, extcap entry"
requires=$(rpm -qp --requires "$rpm")
for lib in 'libbpf.so.1()' 'libpcap.so.0.8()' 'libstdc++.so.6()'; do
    grep -qF "$lib" <<<"$requires" || fail "Requires lacks $lib"
done
ok "Requires (generated): libbpf.so.1, libpcap.so.0.8, libstdc++.so.6 and the C library"
