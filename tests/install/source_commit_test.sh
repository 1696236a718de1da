#!/usr/bin/env bash
# cmake/source_commit.cmake, which writes the build's source commit into version.cpp before every
# build, on a scratch git repository: the file says `git describe --always --dirty` of the
# repository (the commit's hash; "-dirty" once a tracked file changes; the new hash after the next
# commit), is left untouched (same modification time) when nothing changed, and says "" where the
# folder is no git checkout or git is missing. Skips (77) without git.
#
# Usage: source_commit_test.sh SOURCE_DIR CMAKE
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 SOURCE_DIR CMAKE" >&2
  exit 2
fi
source="$1" cmake="$2"
git=$(command -v git) || { echo "SKIP: no git"; exit 77; }
TMP_PREFIX=fast-source-commit-test
. "$(dirname "$0")/steps.sh"

repo="$tmp/repo" out="$tmp/version.cpp"
mkdir -p "$repo"
printf 'commit=@FAST_SOURCE_COMMIT@ version=@PROJECT_VERSION@\n' > "$tmp/version.cpp.in"
write() {  # write GIT: runs the script as the build does
  run_step script 60 "$cmake" -DSOURCE_DIR="$repo" -DGIT="$1" -DPROJECT_VERSION=9.8.7 -DIN="$tmp/version.cpp.in" \
    -DOUT="$out" -P "$source/cmake/source_commit.cmake"
}
expect() {  # expect TEXT: the file's line
  [ "$(cat "$out")" = "$1" ] || fail "version.cpp says '$(cat "$out")', expected '$1'"
}
in_repo() { run_step git 30 "$git" -C "$repo" -c user.name=t -c user.email=t@t "$@"; }

write "$git"
expect "commit= version=9.8.7"  # no .git yet
in_repo init -q
echo a > "$repo/f"
in_repo add f
in_repo commit -q -m one
first=$("$git" -C "$repo" rev-parse --short HEAD)
write "$git"
expect "commit=$first version=9.8.7"
touch -d '2000-01-01' "$out"
write "$git"
[ "$(stat -c %Y "$out")" = "$(date -d '2000-01-01' +%s)" ] || fail "version.cpp was written again with nothing changed"
echo b > "$repo/f"
write "$git"
expect "commit=$first-dirty version=9.8.7"
in_repo commit -q -a -m two
second=$("$git" -C "$repo" rev-parse --short HEAD)
[ "$second" != "$first" ] || fail "the second commit has the first one's hash"
write "$git"
expect "commit=$second version=9.8.7"
write "GIT_EXECUTABLE-NOTFOUND"
expect "commit= version=9.8.7"  # git missing
echo "PASS: the source commit follows commits and edits, and the file is rewritten only when it changes"
