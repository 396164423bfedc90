#!/bin/bash
# Submit a sharded tracelane sweep: a job array (task i runs shard i of N) and a combine
# step that runs after it (afterany), and print their job ids. Every shard splits one
# plan, REPORT_DIR/tracelane_plan.json (the list of iteration directories, `tracelane
# sweep --write-plan`): written here, or, with --after, by a plan job (tracelane-plan.sbatch)
# that runs once those jobs have ended, the array afterok:<plan job>.
#
#   slurm/submit.sh [--shards N] [--after JOBID] [--tracelane PATH] [--report-dir DIR]
#                   [sbatch options...] OUTPUTS_ROOT [-- sweep options...]
#
#   --shards N       array tasks / shards (default 4)
#   --after JOBID    start after JOBID ends, however it ends (afterany): the training
#                    job; repeat or use JOBID:JOBID for several
#   --tracelane PATH the binary (default: $TRACELANE, else the one installed with this
#                    script, else `tracelane` on PATH); resolved to an absolute path
#                    here, so the nodes must see the same file system
#   --report-dir DIR where shard and combined reports go (default: OUTPUTS_ROOT)
#   sbatch options   anything else before OUTPUTS_ROOT goes to every sbatch call, and
#                    overrides the scripts' #SBATCH defaults: --partition=cpu,
#                    --cpus-per-task=16, --mem=64G, --time=4:00:00, --account=...
#   -- ...           options after OUTPUTS_ROOT and -- go to `tracelane sweep` (--level 6;
#                    --plan FILE: the shards split FILE, and no plan is written)
#
# Prints `array_job_id=ID` and `combine_job_id=ID` (and `plan_job_id=ID` with --after) on
# stdout (the rest goes to stderr). Logs: tracelane-shard-<array id>_<i>.out,
# tracelane-combine-<id>.out (and tracelane-plan-<id>.out) in the directory this is run
# from (sbatch's --output/--chdir change that).
set -euo pipefail

# The tracelane installed with this script: `cmake --install` (and the Debian package) set
# this to PREFIX/bin/tracelane. A batch job runs sbatch's spooled copy of the script, so
# the script's own path cannot lead there.
installed_tracelane=

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "submit.sh: $*" >&2; exit 2; }
usage() { sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

shards=4
after=()
tracelane=${TRACELANE:-}
report_dir=
sbatch_args=()
rest=()
while (($#)); do
  case $1 in
    --shards) (($# >= 2)) || die "--shards needs a count"; shards=$2; shift 2 ;;
    --shards=*) shards=${1#*=}; shift ;;
    --after) (($# >= 2)) || die "--after needs a job id"; after+=("$2"); shift 2 ;;
    --after=*) after+=("${1#*=}"); shift ;;
    --tracelane) (($# >= 2)) || die "--tracelane needs a path"; tracelane=$2; shift 2 ;;
    --tracelane=*) tracelane=${1#*=}; shift ;;
    --report-dir) (($# >= 2)) || die "--report-dir needs a directory"; report_dir=$2; shift 2 ;;
    --report-dir=*) report_dir=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) rest+=("$1"); shift ;;
  esac
done
sweep_args=("$@")
# OUTPUTS_ROOT is the last argument before --; everything before it is for sbatch.
((${#rest[@]} >= 1)) || { usage >&2; die "missing OUTPUTS_ROOT"; }
root=${rest[-1]}
sbatch_args=("${rest[@]:0:${#rest[@]}-1}")

[[ $shards =~ ^[1-9][0-9]*$ ]] || die "--shards: expected a positive count, got '$shards'"
[[ -d $root ]] || die "OUTPUTS_ROOT '$root' is not a directory"
root=$(cd "$root" && pwd)
if [[ -z $tracelane && -n $installed_tracelane ]]; then
  if [[ -x $installed_tracelane ]]; then
    tracelane=$installed_tracelane
  else
    echo "submit.sh: '$installed_tracelane', installed with this script, is gone; looking on PATH" >&2
  fi
fi
if [[ -z $tracelane ]]; then
  tracelane=$(command -v tracelane) || die "tracelane not found: pass --tracelane PATH, set TRACELANE, or put it on PATH"
fi
[[ -x $tracelane ]] || die "'$tracelane' is not an executable"
tracelane=$(cd "$(dirname "$tracelane")" && pwd)/$(basename "$tracelane")
if [[ -n $report_dir ]]; then
  mkdir -p "$report_dir"
  report_dir=$(cd "$report_dir" && pwd)
else
  report_dir=$root
fi
command -v sbatch >/dev/null || die "sbatch not found (is this a Slurm login node?)"

# --parsable prints "id" or "id;cluster"
job_id() { local out; out=$("$@") || return 1; out=${out%%;*}; [[ $out =~ ^[0-9]+$ ]] || { echo "submit.sh: unexpected sbatch output '$out'" >&2; return 1; }; echo "$out"; }

# The shards must split one list of iteration directories: a directory created between
# two shards' runs would otherwise shift every position after it (report --combine then
# refuses the later shards). The plan is that list, written once: here, when the array
# can start now; by a job of its own after the jobs of --after, which may still be
# writing traces now. Given a --plan of their own, the shards split it.
plan=
for a in "${sweep_args[@]}"; do [[ $a == --plan || $a == --plan=* ]] && plan=given; done
plan_id=
array_deps=()
if [[ -z $plan ]]; then
  plan=$report_dir/tracelane_plan.json
  sweep_args+=(--plan "$plan")
  if ((${#after[@]})); then
    deps=$(IFS=:; echo "${after[*]}")
    plan_id=$(job_id sbatch --parsable --dependency="afterany:$deps" "${sbatch_args[@]}" \
      "$here/tracelane-plan.sbatch" --tracelane "$tracelane" "$root" "$plan") || die "submitting the plan job failed"
    # No plan, no shards: the array is cancelled, and the combine step says every shard is missing.
    array_deps=(--dependency="afterok:$plan_id" --kill-on-invalid-dep=yes)
  else
    "$tracelane" sweep "$root" --write-plan "$plan" >&2 || die "writing the plan $plan failed"
  fi
elif ((${#after[@]})); then
  deps=$(IFS=:; echo "${after[*]}")
  array_deps=(--dependency="afterany:$deps")
fi
cancel_plan() { [[ -z $plan_id ]] || scancel "$plan_id" || true; }
array_id=$(job_id sbatch --parsable --array="0-$((shards - 1))" "${array_deps[@]}" "${sbatch_args[@]}" \
  "$here/tracelane-array.sbatch" --tracelane "$tracelane" --report-dir "$report_dir" --shards "$shards" \
  "$root" "${sweep_args[@]}") || { cancel_plan; die "submitting the array failed"; }
combine_id=$(job_id sbatch --parsable --dependency="afterany:$array_id" "${sbatch_args[@]}" \
  "$here/tracelane-combine.sbatch" --tracelane "$tracelane" --shards "$shards" "$report_dir") || {
  echo "submit.sh: submitting the combine step failed; cancelling array job $array_id" >&2
  scancel "$array_id" || true
  cancel_plan
  exit 1
}

echo "submit.sh: array job $array_id ($shards shards of $root, plan $plan${plan_id:+ by job $plan_id}), combine job $combine_id -> $report_dir/tracelane_report.json" >&2
[[ -z $plan_id ]] || echo "plan_job_id=$plan_id"
echo "array_job_id=$array_id"
echo "combine_job_id=$combine_id"
