#!/usr/bin/env bash
# make_deb.sh VERSION [ARCH] - build/dthrottle_VERSION_ARCH.deb with debhelper (make deb).
#
# The tree (tracked and untracked files git does not ignore; without git, all but build/)
# is copied to build/deb/dthrottle-VERSION and built there with dpkg-buildpackage, so the
# package is built from source and the developer's build/ is left alone. lintian then
# checks it (its output in build/lintian.txt); an error (E:) fails the target.
#
# ARCH (default: this machine's) other than this machine's is a cross build
# (dpkg-buildpackage -a ARCH; debian/rules runs the Makefile with ARCH=): staged in
# build/ARCH/deb, lintian's output in build/ARCH/lintian.txt, the package in build/ all the same.
set -euo pipefail
VERSION=${1:?usage: make_deb.sh VERSION [ARCH]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NATIVE=$(dpkg --print-architecture)
ARCH=${2:-$NATIVE}
OUT=$ROOT/build
cross_args=()
if [ "$ARCH" = "$NATIVE" ]; then
	LOGDIR=$OUT
else
	LOGDIR=$OUT/$ARCH
	cross_args=(-a "$ARCH")
fi
STAGE=$LOGDIR/deb
SRC=$STAGE/dthrottle-$VERSION
cd "$ROOT"

for tool in dpkg-buildpackage dh lintian pandoc; do
	command -v "$tool" >/dev/null || { echo "make deb: $tool is missing: run make deps" >&2; exit 1; }
done
changelog_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "$changelog_version" != "$VERSION" ]; then
	echo "make deb: debian/changelog is at $changelog_version but the Makefile's VERSION is $VERSION:" >&2
	echo "  add an entry for $VERSION (dch -v $VERSION)" >&2
	exit 1
fi

rm -rf "$STAGE"
mkdir -p "$SRC"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
		[ -e "$f" ] && printf '%s\0' "$f"
	done | tar -c --null -T - | tar -x -C "$SRC"
else
	tar -c --exclude=./build . | tar -x -C "$SRC"
fi

echo "make deb: building in $SRC (a log in $STAGE/build.log)"
if ! (cd "$SRC" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage "${cross_args[@]}" -b -us -uc >"$STAGE/build.log" 2>&1); then
	tail -40 "$STAGE/build.log" >&2
	echo "make deb: dpkg-buildpackage failed (the whole log: $STAGE/build.log)" >&2
	exit 1
fi
deb=$STAGE/dthrottle_${VERSION}_${ARCH}.deb
[ -f "$deb" ] || { echo "make deb: dpkg-buildpackage made no $deb" >&2; exit 1; }
cp "$deb" "$OUT/"

# lintian on the binary package (--info: each tag with its explanation).
lintian --info --display-info --pedantic "$STAGE"/dthrottle_"${VERSION}"_${ARCH}.changes >"$LOGDIR/lintian.txt" 2>&1 || true
echo "lintian ($LOGDIR/lintian.txt):"
grep -E '^[EWIPX]: ' "$LOGDIR/lintian.txt" | sed 's/^/  /' || echo "  (no tags)"
if grep -q '^E: ' "$LOGDIR/lintian.txt"; then
	echo "make deb: lintian reports errors (above)" >&2
	exit 1
fi
echo "package: $OUT/dthrottle_${VERSION}_${ARCH}.deb"
dpkg-deb -c "$OUT/dthrottle_${VERSION}_${ARCH}.deb" | awk '{ print "  " $6 ($7 ? " " $7 " " $8 : "") }'
