#!/bin/bash
# Joins the shards of slurm-shards.sh into one results directory, identical to a local sweep.
#
#   jobid=$(sbatch --parsable --array=0-3 --export=ALL,SHARDS=4,SCENARIO=sweep.toml,RESULTS=$PWD/results/sweep \
#       examples/cluster/slurm-shards.sh)
#   sbatch --dependency=afterok:$jobid --export=ALL,SHARDS=4,RESULTS=$PWD/results/sweep \
#       examples/cluster/slurm-merge.sh
#SBATCH --job-name=quiclab-merge
#SBATCH --time=00:30:00
#SBATCH --output=quiclab-merge-%j.log
set -euo pipefail

QUICLAB=${QUICLAB:-quiclab}
: "${SHARDS:?set SHARDS to the number of shards}"
: "${RESULTS:?set RESULTS to the sweep results directory}"

shards=()
for ((i = 0; i < SHARDS; i++)); do
    shards+=("$RESULTS/shard-$i")
done
"$QUICLAB" merge "$RESULTS/merged" "${shards[@]}"
