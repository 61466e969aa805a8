#!/bin/bash
# One shard of a quiclab sweep per Slurm array task.
#
#   sbatch --array=0-$((SHARDS - 1)) --export=ALL,SHARDS=$SHARDS,SCENARIO=sweep.toml,RESULTS=$PWD/results/sweep \
#       examples/cluster/slurm-shards.sh
#
# Array task i runs shard i of SHARDS (runs k with k mod SHARDS = i) into $RESULTS/shard-i;
# slurm-merge.sh joins them once every task is done. A task that was cut short (time limit,
# preemption) is completed by running it again: the shard resumes where it stopped.
#SBATCH --job-name=quiclab-shard
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
#SBATCH --output=quiclab-shard-%A_%a.log
set -euo pipefail

QUICLAB=${QUICLAB:-quiclab}
SHARDS=${SHARDS:-${SLURM_ARRAY_TASK_COUNT:?set SHARDS or submit as an array job}}
: "${SCENARIO:?set SCENARIO to the scenario file}"
: "${RESULTS:?set RESULTS to the sweep results directory}"
mkdir -p "$RESULTS"

# The same flags (--set, --vary, --reps, --seed) in every task: a shard of another sweep is
# refused by the merge. --resume completes a retried task; -j uses the task's CPUs.
"$QUICLAB" sim "$SCENARIO" ${QUICLAB_FLAGS:-} \
    --shard "$SLURM_ARRAY_TASK_ID/$SHARDS" \
    --out "$RESULTS/shard-$SLURM_ARRAY_TASK_ID" \
    --resume -j "${SLURM_CPUS_PER_TASK:-1}"
