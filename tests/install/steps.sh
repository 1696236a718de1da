# Shared by the install tests (sourced, not run): a temporary folder $tmp, removed at exit with the
# step still running; fail MESSAGE; run_step NAME SECONDS COMMAND... runs COMMAND under timeout with
# its output in $tmp/NAME.log, and on failure prints the log's end and fails naming the step;
# check_runpath FILE... fails for an ELF file whose RPATH or RUNPATH has an empty or relative entry
# (the loader reads those from the current directory: a library planted there would be loaded), and
# for a FILE that does not exist or is no ELF file.
# Set TMP_PREFIX before sourcing: the temporary folder's name.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/${TMP_PREFIX:-fast-test}.XXXXXX") || exit 1
step_pid=""
cleanup() {
  [ -n "$step_pid" ] && kill "$step_pid" 2>/dev/null && wait "$step_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

run_step() {
  local name="$1" seconds="$2"
  shift 2
  timeout -k 10 "$seconds" "$@" > "$tmp/$name.log" 2>&1 &
  step_pid=$!
  wait "$step_pid"
  local rc=$?
  step_pid=""
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$tmp/$name.log" >&2
    [ "$rc" -eq 124 ] && fail "$name: did not finish within $seconds s"
    fail "$name: exit status $rc (output above)"
  fi
}

check_runpath() {
  local file path entry dynamic
  for file in "$@"; do
    [ -f "$file" ] || fail "check_runpath: '$file' does not exist"
    dynamic=$(readelf -d "$file") || fail "check_runpath: readelf cannot read '$file'"
    path=$(printf '%s\n' "$dynamic" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p')
    [ -z "$path" ] && continue
    case "$path" in
      :* | *: | *::*) fail "$file: its RUNPATH '$path' has an empty entry, read as the current directory" ;;
    esac
    local IFS=:
    for entry in $path; do
      case "$entry" in
        /* | '$ORIGIN'*) ;;
        *) fail "$file: its RUNPATH '$path' has the relative entry '$entry'" ;;
      esac
    done
  done
}
