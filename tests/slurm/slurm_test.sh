#!/bin/bash
# Test of slurm/ against a real Slurm: starts a private single-node cluster (munged,
# slurmctld, slurmd) on 127.0.0.1 in a scratch directory under /tmp, then
#   1. slurm/submit.sh --after <a failing "training" job> --shards 3 on a copy of
#      corpus/sweep_tree: the plan job, then the array (every task with --plan) and the
#      combine step run, the combined report is kept; then the same with a plan job that
#      fails: the array is cancelled, the combine step runs and fails;
#   2. slurm/tracelane-sweep.sbatch --dependency=afterany:<another failing job> (the
#      post-job step) on a fresh copy at the same path: its report is kept;
#   3. a single-node `tracelane sweep` of a fresh copy at the same path;
#   4. tracelane-array.sbatch (--array=0-1) and tracelane-combine.sbatch submitted by hand
#      on a copy with a corrupt rank file: its shard fails, the combine step still runs
#      (afterany), writes the report, lists the shard and fails;
#   5. `cmake --install` of the binary's build into a scratch prefix, and the installed
#      tracelane-sweep.sbatch submitted with no tracelane on the job's PATH: it runs the
#      installed binary (sbatch runs a spooled copy of the script) with the same outputs;
# and checks that 1 and 2 equal 3 except for the timing columns (`seconds`, JSON `runs`),
# that the compacted outputs are byte-identical, and that the logs are named %x-%A_%a.out.
#
#   tests/slurm/slurm_test.sh TRACELANE_BINARY [REPO_ROOT]
#
# Needs root (slurmd runs jobs as root here) and the Debian packages slurmctld, slurmd,
# slurm-client, munge: installed with apt-get when missing and running as root (about
# 10 s). Exits 77 (skipped) when not root, when TRACELANE_SKIP_SLURM=1, or when the corpus
# is absent (TRACELANE_SHARED, default REPO_ROOT/../shared). Every wait is bounded
# (SLURM_TEST_JOB_TIMEOUT seconds for the jobs, default 120). Daemons are stopped and the
# scratch directory removed on any exit; only processes this script started are killed, by
# recorded pid (slurmstepd and job processes are found by an environment marker only they
# carry). Set TRACELANE_SLURM_KEEP=1 to keep the scratch directory for a post-mortem.
set -euo pipefail

test_start=$(date +%s%N)
elapsed() { local ns=$(($(date +%s%N) - test_start)); printf '%d.%d' $((ns / 1000000000)) $((ns / 100000000 % 10)); }
log() { echo "[slurm_test $(elapsed)s] $*"; }
skip() {
  echo "**********************************************************************"
  echo "SKIPPED: slurm_test: $*"
  echo "**********************************************************************"
  exit 77
}
fail() { echo "FAILED: slurm_test: $*" >&2; exit 1; }

(($# >= 1)) || { echo "usage: $0 TRACELANE_BINARY [REPO_ROOT]" >&2; exit 2; }
tracelane=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=${2:-$(cd "$here/../.." && pwd)}
[[ -x $tracelane ]] || fail "'$tracelane' is not an executable"
tracelane=$(cd "$(dirname "$tracelane")" && pwd)/$(basename "$tracelane")
repo=$(cd "$repo" && pwd)
slurm_dir=$repo/slurm
job_timeout=${SLURM_TEST_JOB_TIMEOUT:-120}

# --- prerequisites ------------------------------------------------------------------------
[[ ${TRACELANE_SKIP_SLURM:-} == 1 ]] && skip "TRACELANE_SKIP_SLURM=1"
shared=${TRACELANE_SHARED:-$repo/../shared}
corpus=$shared/corpus/sweep_tree
[[ -d $corpus ]] || skip "corpus not found at '$corpus': set TRACELANE_SHARED to the shared/ directory"
command -v python3 >/dev/null || skip "python3 not found"
[[ $(id -u) == 0 ]] || skip "needs root to run slurmd (CI runs it as root)"

missing_tools() {
  local t missing=()
  for t in munged slurmctld slurmd sbatch scontrol squeue scancel sinfo; do
    command -v "$t" >/dev/null || missing+=("$t")
  done
  echo "${missing[*]}"
}
if [[ -n $(missing_tools) ]]; then
  command -v apt-get >/dev/null || skip "missing $(missing_tools) and no apt-get to install slurmctld slurmd slurm-client munge"
  packages=(slurmctld slurmd slurm-client munge)
  log "installing ${packages[*]} (missing: $(missing_tools))"
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d keeps the packages from starting the system's own daemons
  if ! timeout 300 apt-get install -y --no-install-recommends "${packages[@]}" >/tmp/tracelane-slurm-apt.$$.log 2>&1; then
    log "apt-get install failed; running apt-get update and retrying"
    timeout 300 apt-get update >>/tmp/tracelane-slurm-apt.$$.log 2>&1 || true
    timeout 300 apt-get install -y --no-install-recommends "${packages[@]}" >>/tmp/tracelane-slurm-apt.$$.log 2>&1 || {
      tail -20 /tmp/tracelane-slurm-apt.$$.log >&2; rm -f /tmp/tracelane-slurm-apt.$$.log
      fail "could not install ${packages[*]} (set TRACELANE_SKIP_SLURM=1 to skip this test)"
    }
  fi
  rm -f /tmp/tracelane-slurm-apt.$$.log
  [[ -z $(missing_tools) ]] || fail "still missing after apt-get: $(missing_tools)"
fi

# --- scratch directory and cleanup --------------------------------------------------------
# Under /tmp, world-executable: munged refuses a socket below a 0700 directory (/root).
scratch=$(mktemp -d /tmp/tracelane-slurm.XXXXXX)
chmod 0755 "$scratch"
marker="TRACELANE_SLURM_TEST_MARK=$scratch"   # carried by every process of this cluster
pids=()          # daemons we started, in start order
job_ids=()       # jobs we submitted
export SLURM_CONF=$scratch/etc/slurm.conf

alive() { [[ -e /proc/$1 ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
marked_pids() {   # processes whose environment holds our marker (slurmstepd, job steps)
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $p == "$$" || $p == "${BASHPID:-}" ]] && continue
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "$marker" && echo "$p"
  done
  return 0
}
cleanup() {
  local rc=$? p i
  trap - EXIT INT TERM
  set +e
  if ((rc != 0 && rc != 77)) && [[ -d $scratch/log ]]; then
    for f in "$scratch"/log/*.log; do echo "--- tail of $f"; tail -15 "$f"; done
    for f in "$scratch"/run/*.out; do [[ -e $f ]] && { echo "--- $f"; tail -20 "$f"; }; done
  fi
  if ((${#job_ids[@]})) && alive "${pids[1]:-0}"; then
    timeout 10 scancel "${job_ids[@]}" 2>/dev/null
  fi
  if ((${#pids[@]} > 1)) && alive "${pids[1]}"; then
    timeout 10 scontrol shutdown >/dev/null 2>&1
  fi
  # wait up to 10 s for slurmctld and slurmd to stop, then TERM and KILL what is left
  # (munged too), newest first
  for ((i = 0; i < 100; i++)); do
    local any=0
    for p in "${pids[@]:1}"; do alive "$p" && any=1; done
    ((any)) || break
    sleep 0.1
  done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do alive "${pids[i]}" && kill -TERM "${pids[i]}" 2>/dev/null; done
  for p in $(marked_pids); do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}" $(marked_pids); do alive "$p" && kill -KILL "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  if [[ ${TRACELANE_SLURM_KEEP:-} == 1 ]]; then
    echo "slurm_test: kept $scratch"
  else
    rm -rf "$scratch"
  fi
  if ((rc == 0)); then echo "slurm_test: PASSED in $(elapsed) s"; else echo "slurm_test: exit $rc after $(elapsed) s"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$scratch"/{etc,munge,log,state,spool,run,reports}
chmod 0755 "$scratch/munge"   # munged: the socket directory must be world-executable

# --- munge --------------------------------------------------------------------------------
dd if=/dev/urandom of="$scratch/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$scratch/munge/munge.key"
env "$marker" munged -F --socket="$scratch/munge/munge.socket" --key-file="$scratch/munge/munge.key" \
  --pid-file="$scratch/munge/munged.pid" --seed-file="$scratch/munge/seed" >"$scratch/log/munged.log" 2>&1 &
pids+=($!)
for ((i = 0; i < 50; i++)); do [[ -S $scratch/munge/munge.socket ]] && break; alive "${pids[0]}" || break; sleep 0.1; done
[[ -S $scratch/munge/munge.socket ]] || { cat "$scratch/log/munged.log" >&2; fail "munged did not start"; }

# --- slurm.conf ---------------------------------------------------------------------------
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
# The node as slurmd sees it, with RealMemory at 90% (a node that claims more is drained).
node=$(slurmd -C | head -1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
memory=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
layout=$(grep -o 'Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*' <<<"$node")
[[ -n $cpus && -n $memory ]] || fail "could not read 'slurmd -C': $node"
cat >"$SLURM_CONF" <<EOF
ClusterName=tracelanetest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$scratch/munge/munge.socket
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/run/slurmctld.pid
SlurmdPidFile=$scratch/run/slurmd.pid
SlurmctldLogFile=$scratch/log/slurmctld.log
SlurmdLogFile=$scratch/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MailProg=/bin/true
MinJobAge=600
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus $layout RealMemory=$((memory * 9 / 10)) State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF

# --- daemons ------------------------------------------------------------------------------
env "$marker" slurmctld -D -i -f "$SLURM_CONF" >"$scratch/log/slurmctld.stderr.log" 2>&1 &
pids+=($!)
env "$marker" slurmd -D -f "$SLURM_CONF" -N localhost >"$scratch/log/slurmd.stderr.log" 2>&1 &
pids+=($!)
log "munged ${pids[0]}, slurmctld ${pids[1]} (port $ctld_port), slurmd ${pids[2]} (port $slurmd_port), $cpus cpus; scratch $scratch"

deadline=$((SECONDS + 30))
until [[ $(timeout 5 sinfo -h -n localhost -o %T 2>/dev/null) == idle ]]; do
  alive "${pids[1]}" || fail "slurmctld exited"
  alive "${pids[2]}" || fail "slurmd exited"
  ((SECONDS < deadline)) || { timeout 5 scontrol show node localhost >&2; fail "the node did not become idle within 30 s"; }
  sleep 0.2
done
log "node idle"

# --- jobs ---------------------------------------------------------------------------------
# Small requests for the small local node; they override the scripts' #SBATCH defaults.
job_mem=$((memory * 9 / 10 / 8))
((job_mem > 2048)) && job_mem=2048
small=(--cpus-per-task=1 --mem="${job_mem}M" --time=00:05:00)

submit() {   # submit VAR ARGS...: sbatch --parsable ARGS..., the job id into VAR (and job_ids)
  local var=$1 out
  shift
  out=$(env "$marker" sbatch --parsable "$@") || fail "sbatch $* failed"
  out=${out%%;*}
  [[ $out =~ ^[0-9]+$ ]] || fail "sbatch printed '$out'"
  job_ids+=("$out")
  printf -v "$var" %s "$out"
}
job_field() {   # job_field ID FIELD: FIELD of every record of `scontrol show job ID` (array: one per task)
  timeout 10 scontrol -o show job "$1" 2>/dev/null | grep -o " $2=[^ ]*" | cut -d= -f2-
}
wait_done() {   # wait_done ID...: until every job (and array task) has ended, bounded by job_deadline
  local id state
  while :; do
    local pending=0
    for id; do
      state=$(job_field "$id" JobState)
      [[ -n $state ]] || fail "job $id: scontrol shows nothing"
      grep -qvE '^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)$' <<<"$state" && pending=1
    done
    ((pending)) || return 0
    if ((SECONDS >= job_deadline)); then
      for id; do timeout 10 scontrol show job "$id" >&2; done
      fail "jobs $* not done within ${job_timeout} s"
    fi
    sleep 0.2
  done
}
expect_exit() {   # expect_exit ID STATE CODE: every record of job ID ended so
  local id=$1 state=$2 code=$3 states codes
  states=$(job_field "$id" JobState | sort -u | tr '\n' ' ')
  codes=$(job_field "$id" ExitCode | sort -u | tr '\n' ' ')
  [[ $states == "$state " && $codes == "$code " ]] || {
    timeout 10 scontrol show job "$id" >&2
    fail "job $id: expected $state with exit code $code, got states '$states' exit codes '$codes'"
  }
}
fresh_tree() { rm -rf "$scratch/tree"; cp -r "$corpus" "$scratch/tree"; }
snapshot() {   # snapshot NAME: sha256 of every compacted output in the tree
  (cd "$scratch/tree" && find . -name '*_compacted.json*' -type f -print0 | sort -z | xargs -0 sha256sum) >"$scratch/reports/$1.outputs"
}
job_deadline=$((SECONDS + job_timeout))
cd "$scratch/run"   # logs (%x-%A_%a.out) land here

# 1. array + combine, after a "training job" that fails (afterany still starts it)
fresh_tree
submit train "${small[@]}" --job-name=fake-training --output=/dev/null --wrap 'sleep 1; exit 3'
shards=3
ids=$(env "$marker" "$slurm_dir/submit.sh" --shards "$shards" --after "$train" --tracelane "$tracelane" \
        --report-dir "$scratch/tree/reports" "${small[@]}" "$scratch/tree" -- --quiet) || fail "submit.sh failed"
plan_id=$(sed -n 's/^plan_job_id=//p' <<<"$ids")
array_id=$(sed -n 's/^array_job_id=//p' <<<"$ids")
combine_id=$(sed -n 's/^combine_job_id=//p' <<<"$ids")
[[ $plan_id =~ ^[0-9]+$ && $array_id =~ ^[0-9]+$ && $combine_id =~ ^[0-9]+$ ]] || fail "submit.sh printed '$ids'"
job_ids+=("$plan_id" "$array_id" "$combine_id")
log "training job $train, plan job $plan_id, array job $array_id, combine job $combine_id"
wait_done "$train" "$plan_id" "$array_id" "$combine_id"
expect_exit "$train" FAILED 3:0
expect_exit "$plan_id" COMPLETED 0:0
expect_exit "$array_id" COMPLETED 0:0
expect_exit "$combine_id" COMPLETED 0:0
plan=$scratch/tree/reports/tracelane_plan.json
[[ -s $plan && -s $scratch/run/tracelane-plan-$plan_id.out ]] || fail "no plan $plan, or no log of the plan job"
[[ $(job_field "$array_id" JobState | wc -l) == "$shards" ]] || fail "array job $array_id does not have $shards tasks"
for ((k = 0; k < shards; k++)); do
  log_file=$scratch/run/tracelane-shard-${array_id}_$k.out
  [[ -s $log_file ]] || fail "no log $log_file (expected %x-%A_%a.out): $(ls "$scratch/run")"
  grep -q -- "--shard $k/$shards .*--plan $plan" "$log_file" \
    || { cat "$log_file" >&2; fail "task $k did not run shard $k/$shards with --plan $plan"; }
  [[ -e $scratch/tree/reports/tracelane_report.shard-$k-of-$shards.json ]] || fail "no report of shard $k"
done
[[ -s $scratch/run/tracelane-combine-$combine_id.out ]] || fail "no combine log: $(ls "$scratch/run")"
cp "$scratch/tree/reports/tracelane_report.json" "$scratch/reports/array.json"
cp "$scratch/tree/reports/tracelane_report.csv" "$scratch/reports/array.csv"
snapshot array
log "plan + array + combine done"

# 1b. a plan job that fails (its plan's name is a directory): the array never runs
#     (afterok, --kill-on-invalid-dep), the combine step does (afterany) and fails
fresh_tree
mkdir -p "$scratch/tree/reports/tracelane_plan.json"
submit train "${small[@]}" --job-name=fake-training --output=/dev/null --wrap 'exit 0'
ids=$(env "$marker" "$slurm_dir/submit.sh" --shards 2 --after "$train" --tracelane "$tracelane" \
        --report-dir "$scratch/tree/reports" "${small[@]}" "$scratch/tree" -- --quiet) || fail "submit.sh failed"
plan_id=$(sed -n 's/^plan_job_id=//p' <<<"$ids")
array_id=$(sed -n 's/^array_job_id=//p' <<<"$ids")
combine_id=$(sed -n 's/^combine_job_id=//p' <<<"$ids")
job_ids+=("$plan_id" "$array_id" "$combine_id")
wait_done "$train" "$plan_id" "$array_id" "$combine_id"
expect_exit "$plan_id" FAILED 2:0
[[ $(job_field "$array_id" JobState | sort -u) == CANCELLED ]] \
  || { timeout 10 scontrol show job "$array_id" >&2; fail "the array ran without its plan"; }
expect_exit "$combine_id" FAILED 1:0
grep -q "every shard is missing" "$scratch/run/tracelane-combine-$combine_id.out" \
  || { cat "$scratch/run/tracelane-combine-$combine_id.out" >&2; fail "the combine log does not say every shard is missing"; }
log "failed plan job: array cancelled, combine step failed"

# 2. the post-job step: one job for the whole tree, after a failing training job
fresh_tree
submit train "${small[@]}" --job-name=fake-training --output=/dev/null --wrap 'exit 1'
submit sweep_id "${small[@]}" --dependency="afterany:$train" "$slurm_dir/tracelane-sweep.sbatch" \
  --tracelane "$tracelane" "$scratch/tree" --quiet
log "training job $train, post-job sweep $sweep_id"
wait_done "$train" "$sweep_id"
expect_exit "$sweep_id" COMPLETED 0:0
[[ -s $scratch/run/tracelane-sweep-$sweep_id.out ]] || fail "no log tracelane-sweep-$sweep_id.out: $(ls "$scratch/run")"
cp "$scratch/tree/tracelane_report.json" "$scratch/reports/postjob.json"
cp "$scratch/tree/tracelane_report.csv" "$scratch/reports/postjob.csv"
snapshot postjob
log "post-job sweep done"

# 3. single node, same path
fresh_tree
"$tracelane" sweep "$scratch/tree" --quiet --jobs 2 || fail "single-node tracelane sweep failed"
cp "$scratch/tree/tracelane_report.json" "$scratch/reports/node.json"
cp "$scratch/tree/tracelane_report.csv" "$scratch/reports/node.csv"
snapshot node

python3 "$here/compare_reports.py" "$scratch/reports/node" "$scratch/reports/array" "$scratch/reports/postjob" \
  || fail "reports differ"
for run in array postjob; do
  cmp -s "$scratch/reports/node.outputs" "$scratch/reports/$run.outputs" \
    || { diff "$scratch/reports/node.outputs" "$scratch/reports/$run.outputs" >&2; fail "compacted outputs of the $run run differ"; }
done
log "combined report == post-job report == single-node report (timing columns aside); outputs identical ($(wc -l <"$scratch/reports/node.outputs") files)"

# 4. a failing shard: the combine step still runs (afterany), lists it and fails
fresh_tree
echo "not a trace" >"$scratch/tree/dlrm_8gpu/profile_trace/iteration_12/rank3_trace.json"
# the scripts by hand this time: the shard count from SLURM_ARRAY_TASK_COUNT, the combine
# step reading the whole directory
submit array_id "${small[@]}" --array=0-1 "$slurm_dir/tracelane-array.sbatch" --tracelane "$tracelane" \
  "$scratch/tree" --quiet
submit combine_id "${small[@]}" --dependency="afterany:$array_id" "$slurm_dir/tracelane-combine.sbatch" \
  --tracelane "$tracelane" "$scratch/tree"
log "corrupt rank file: array job $array_id, combine job $combine_id"
wait_done "$array_id" "$combine_id"
# dlrm_8gpu sorts first: position 0, shard 0 of 2
[[ $(job_field "${array_id}_0" ExitCode) == 1:0 && $(job_field "${array_id}_1" ExitCode) == 0:0 ]] \
  || { timeout 10 scontrol show job "$array_id" >&2; fail "expected shard 0 to fail (exit 1) and shard 1 to pass"; }
expect_exit "$combine_id" FAILED 1:0
grep -q "shards with failed rows: 0/2" "$scratch/run/tracelane-combine-$combine_id.out" \
  || { cat "$scratch/run/tracelane-combine-$combine_id.out" >&2; fail "the combine log does not list shard 0 as failed"; }
[[ -e $scratch/tree/tracelane_report.json ]] || fail "no combined report next to the failed shard's"
log "failing shard reported by the combine step"

# 5. the installed scripts: `cmake --install` of the build this binary comes from. sbatch
#    runs a spooled copy of the batch script, which must still run the tracelane installed
#    beside it (PREFIX/bin), with no --tracelane, no TRACELANE and none on the job's PATH.
build_dir=$(dirname "$tracelane")
if [[ -f $build_dir/cmake_install.cmake ]] && command -v cmake >/dev/null; then
  prefix=$scratch/prefix
  cmake --install "$build_dir" --prefix "$prefix" >"$scratch/log/install.log" 2>&1 \
    || { cat "$scratch/log/install.log" >&2; fail "cmake --install $build_dir --prefix $prefix failed"; }
  fresh_tree
  submit sweep_id "${small[@]}" --export="ALL,PATH=/usr/sbin:/usr/bin:/sbin:/bin,TRACELANE=" \
    "$prefix/share/tracelane/slurm/tracelane-sweep.sbatch" "$scratch/tree" --quiet
  wait_done "$sweep_id"
  log_file=$scratch/run/tracelane-sweep-$sweep_id.out
  expect_exit "$sweep_id" COMPLETED 0:0
  grep -qF "tracelane-sweep: $prefix/bin/tracelane sweep" "$log_file" \
    || { cat "$log_file" >&2; fail "the installed tracelane-sweep.sbatch did not run $prefix/bin/tracelane"; }
  snapshot installed
  cmp -s "$scratch/reports/node.outputs" "$scratch/reports/installed.outputs" \
    || { diff "$scratch/reports/node.outputs" "$scratch/reports/installed.outputs" >&2; fail "outputs of the installed script differ"; }
  log "installed tracelane-sweep.sbatch ran $prefix/bin/tracelane from sbatch's spool"
else
  log "NOTE: no cmake_install.cmake beside $tracelane: the installed scripts were not run under sbatch"
fi
