# Sourced by scripts/instruction-counts and scripts/instruction-profile: the
# benches/instructions.rs binary they run under callgrind, the workloads it
# knows, and how many iterations of each they count (fewer for the long
# ones; the counts are per unit of work either way).

# glibc copies and fills of a few KiB and more with one `rep movsb` or
# `rep stosb`, and callgrind counts each byte such an instruction moves as
# one instruction executed: a 10 KB `memmove` counted about 10,000, where
# the hardware moves it in a few hundred cycles. With the thresholds at
# their highest, glibc takes its vector loop for every size, which
# callgrind counts as the loop it is (W3's write releasing one claim: the
# baseline's 15,270.4 instructions, 14,405 of them one `memmove`, became
# 2,249.0). The callers run under this environment; W1-W4 and the graph
# replays count the same either way.
export GLIBC_TUNABLES="glibc.cpu.x86_rep_movsb_threshold=2147483647:glibc.cpu.x86_rep_stosb_threshold=2147483647"

# Every workload of benches/instructions.rs, in the order the counts print.
INSTRUCTION_WORKLOADS=(w1 w1-claimed w1-single w1-single-claimed w2 w2-own-strings w3 w3-searched w3-carve w3-carve-mid w3-one w3-fail w4 w4-own-strings w5 w5-registered w5-gpt2 w5-gpt2-registered w5-gpt2-warm w5-resnet w5-resnet-warm w5-gpt2-new-ids w5-resnet-new-ids w5-two-streams w5-gpt2-decode w5-gpt2-decode-warm graph graph-failed graph-gpt2 graph-gpt2-failed graph-decode graph-decode-failed)

# Builds the instructions bench if needed and prints its executable's path;
# if it does not build, shows cargo's errors and fails, so that the callers
# stop instead of counting nothing.
instructions_binary() {
  local path
  path=$(cargo bench --bench instructions --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="instructions" and m.get("executable"):
        print(m["executable"])')
  if [ -z "$path" ]; then
    echo "the instructions bench does not build:" >&2
    cargo bench --bench instructions --no-run >&2 || true
    return 1
  fi
  echo "$path"
}

# How many iterations of workload $1 to count.
instructions_iterations() {
  case $1 in
    w5) echo 1 ;;
    # A real log's step is about 200 launches: more of them, so that the
    # count a launch is not one step's.
    w5-gpt2 | w5-gpt2-registered | w5-gpt2-warm | w5-resnet | w5-resnet-warm | w5-gpt2-new-ids | w5-resnet-new-ids | w5-two-streams | w5-gpt2-decode | w5-gpt2-decode-warm) echo 20 ;;
    w3-carve | w3-carve-mid | w3-one | w3-fail) echo 5 ;;
    *) echo 3 ;;
  esac
}
