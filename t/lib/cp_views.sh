# SPDX-License-Identifier: BSD-2-Clause
# t/lib/cp_views.py from a test script (source it after testlib.sh; PY is
# Debian's python3):
#
#   sampling NAME G=PORT...  # sample in the background into $T/NAME.jsonl
#                            # until unsample (at most 60 s)
#   unsample NAME
#   checks NAME ARGS...      # cp_views.py check, its RESULT lines as TAP
#
# Used by t/integration/cp_e2e.sh and cp_rebalance.sh.

VIEWS="$top_srcdir/t/lib/cp_views.py"

# checks NAME ARGS...: cp_views.py check, its RESULT lines as TAP.
checks() {
  _n=$1
  shift
  "$PY" "$VIEWS" check "$@" >"$T/check-$_n.out" 2>"$T/check-$_n.err"
  ok $? "the samples were read ($_n)"
  while read -r tag st name; do
    case $tag in
      RESULT) ok "$st" "$name" ;;
      VALUE) echo "#   $st $name" ;;
    esac
  done <"$T/check-$_n.out"
  [ -s "$T/check-$_n.err" ] && sed 's/^/#   /' "$T/check-$_n.err" | head -10
  return 0
}
# sampling NAME ARGS...: cp_views.py sample in the background into
# $T/NAME.jsonl until unsample (at most 60 s).
sampling() {
  _sn=$1
  shift
  rm -f "$T/$_sn.stop"
  "$PY" "$VIEWS" sample "$T/$_sn.jsonl" 60 "$T/$_sn.stop" "$@" 2>"$T/$_sn.err" &
  SAMPLER=$!
  PIDS="$PIDS $SAMPLER"
  wait_for test -s "$T/$_sn.jsonl"
}
unsample() {
  : >"$T/$1.stop"
  wait_exit "$SAMPLER" 10
}
