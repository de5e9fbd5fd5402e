#!/usr/bin/env bash
# Record the ten example programs as taintworld logs and validate each one
# (on CUDA, the device-assert program a second time with blocking launches).
#
#   tools/record_all.sh OUTDIR [cuda|cpu]
#
# Writes OUTDIR/{gpt2_train_step,resnet_train_step,two_streams,cuda_graph_replay,gpt2_graph_train,gpt2_decode,gpt2_amp_step,gpt2_decode_graph,gpt2_oom_fallback,gpt2_device_assert}.jsonl.gz
# and, on CUDA, OUTDIR/gpt2_device_assert_blocking.jsonl.gz
# (with the suffix _cpu before .jsonl.gz when recording on the CPU, so a CPU
# stand-in is never mistaken for a GPU recording), OUTDIR/provenance.txt
# (versions, GPU, parameter counts, event counts, validation results),
# OUTDIR/record_stderr.txt and OUTDIR/tests.txt (the recorder's CPU tests).
#
# Made to run in one call on the GPU machine (one call = one machine start),
# so it records everything, validates everything, and exits non-zero if any
# step failed, without stopping at the first failure.
set -u
OUT_DIR=${1:?usage: record_all.sh OUTDIR [cuda|cpu]}
DEVICE=${2:-cuda}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
PROV="$OUT_DIR/provenance.txt"
ERR="$OUT_DIR/record_stderr.txt"
: >"$PROV"
: >"$ERR"
status=0

if [ "$DEVICE" = cpu ]; then
  SUFFIX=_cpu
  # The programs pick CUDA when they see it; hide it so they run where the
  # recorder looks.
  export CUDA_VISIBLE_DEVICES=""
else
  SUFFIX=
fi

{
  echo "# taintworld example logs: provenance"
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "recorded_with: tools/record_all.sh $OUT_DIR $DEVICE"
  echo "host: $(uname -srm)"
  "$PY" - "$DEVICE" <<'EOF'
import platform, sys
import torch
print(f"python: {platform.python_version()}")
print(f"torch: {torch.__version__} (CUDA {torch.version.cuda}, cuDNN "
      f"{torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None})")
if sys.argv[1] == "cuda":
    if not torch.cuda.is_available():
        print("ERROR: CUDA not available")
        sys.exit(1)
    p = torch.cuda.get_device_properties(0)
    print(f"gpu: {torch.cuda.get_device_name(0)}, {p.total_memory // 2**20} MiB, "
          f"{p.multi_processor_count} SMs, capability {p.major}.{p.minor}")
else:
    print("gpu: none used (CPU recording: CPU tensors stand for device memory)")
EOF
} >>"$PROV" 2>&1 || status=1
if [ "$DEVICE" = cuda ] && command -v nvidia-smi >/dev/null; then
  echo "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)" >>"$PROV"
fi

record() {  # [--as LOG_NAME] [--blocking] NAME CHECK_ARGS...
  local as= flags=()
  while :; do
    case $1 in
      --as) as=$2; shift 2 ;;
      --blocking) flags+=(--blocking); shift ;;
      *) break ;;
    esac
  done
  local name=$1; shift
  as=${as:-$name}
  local log="$OUT_DIR/$as$SUFFIX.jsonl.gz"
  echo >>"$PROV"
  echo "## $as" >>"$PROV"
  echo "command: python3 tools/record_torch.py tools/programs/$name.py -o $(basename "$log") --device $DEVICE${flags[*]:+ ${flags[*]}}" >>"$PROV"
  local t0=$SECONDS
  local err_one="$OUT_DIR/.stderr_$as"
  if ! "$PY" "$HERE/record_torch.py" "$HERE/programs/$name.py" -o "$log" --device "$DEVICE" \
      "${flags[@]}" >>"$PROV" 2>"$err_one"; then
    echo "RECORDING FAILED (see record_stderr.txt)" >>"$PROV"
    status=1
  fi
  echo "seconds: $((SECONDS - t0))" >>"$PROV"
  grep '^record_torch:' "$err_one" >>"$PROV"
  { echo "### $as"; cat "$err_one"; } >>"$ERR"
  rm -f "$err_one"
  if [ -f "$log" ]; then
    echo "bytes: $(wc -c <"$log")" >>"$PROV"
    "$PY" "$HERE/check_log.py" "$log" "$@" >>"$PROV" 2>&1 || status=1
    "$PY" - "$log" >>"$PROV" 2>&1 <<'EOF'
import collections, gzip, json, sys
kern = collections.Counter()
with gzip.open(sys.argv[1], "rt") as f:
    for line in f:
        e = json.loads(line)
        if e["op"] == "launch":
            kern[e["kernel"]] += 1
print(f"distinct kernels: {len(kern)}; most launched: "
      + ", ".join(f"{k} x{n}" for k, n in kern.most_common(8)))
EOF
  fi
}

if [ "$DEVICE" = cuda ]; then
  record gpt2_train_step --expect-read --min launch=100
  record resnet_train_step --expect-read --min launch=100
  record two_streams --expect-read --min-streams 2 --min host_write=6
  record cuda_graph_replay --expect-read --min capture_end=1 --min replay=5 --min host_write=5
  record gpt2_graph_train --expect-read --min capture_end=1 --min replay=20 --min host_write=20
  record gpt2_decode --expect-read --min read=16 --min launch=100
  record gpt2_amp_step --expect-read --min read=4 --min launch=100
  record gpt2_decode_graph --expect-read --min read=16 --min capture_end=1 --min replay=15
  record gpt2_oom_fallback --expect-read --min failed=1 --min launch=100
  record gpt2_device_assert --expect-read --min device_fault=1 --min failed=1
  # The same assert with every launch waiting for its kernel: the fault is
  # reported by the embedding that hit it, not by a later call.
  record --as gpt2_device_assert_blocking --blocking gpt2_device_assert \
    --expect-read --expect-blocking --min device_fault=1 --min failed=1
else
  record gpt2_train_step --expect-read --min launch=100
  record resnet_train_step --expect-read --min launch=100
  record two_streams --expect-read
  record cuda_graph_replay --expect-read
  record gpt2_graph_train --expect-read
  record gpt2_decode --expect-read --min read=16
  record gpt2_amp_step --expect-read
  record gpt2_decode_graph --expect-read --min read=16
  record gpt2_oom_fallback --expect-read
  record gpt2_device_assert --min failed=1
fi

echo >>"$PROV"
echo "## recorder tests (tools/test_record_torch.py, CPU mode)" >>"$PROV"
if "$PY" "$HERE/test_record_torch.py" >"$OUT_DIR/tests.txt" 2>&1; then
  tail -1 "$OUT_DIR/tests.txt" >>"$PROV"
else
  grep -E '^(FAIL|[0-9]+ passed)' "$OUT_DIR/tests.txt" >>"$PROV"
  status=1
fi
echo "status: $status" >>"$PROV"
cat "$PROV"
exit $status
