#!/usr/bin/env bash
# Run a protosim sweep as a Slurm job array: task K of N simulates the K-th slice of the plan
# list (`protosim sweep --shard K/N`, the enumeration is identical in every task) and writes
# shard-K.json; `protosim merge` then ranks the union. Example (1024 A100s, 16 tasks of 8 CPUs):
#
#   build/protosim cluster dgx-a100 --nodes 128 -o /shared/a100x1024.xml
#   sbatch --array=1-16 --cpus-per-task=8 scripts/sweep-slurm.sh \
#       strategies/examples/sweep-gpt3-175b.yaml /shared/a100x1024.xml /shared/sweep-out
#   # when the array is done (or: sbatch --dependency=afterok:JOBID --wrap "..."):
#   build/protosim merge /shared/sweep-out/shard-*.json --csv ranked.csv --json ranked.json \
#       --plot ranked.svg
#
# Without Slurm, the same slices run with GNU parallel (one line per shard):
#   parallel -j 4 build/protosim sweep SWEEP.yaml --cluster CLUSTER.xml --shard {}/4 \
#       --json out/shard-{}.json --no-progress ::: 1 2 3 4
#SBATCH --job-name=protosim-sweep
#SBATCH --output=protosim-sweep-%A_%a.log
set -euo pipefail

if [ $# -lt 3 ]; then
    echo "usage: sbatch --array=1-N scripts/sweep-slurm.sh SWEEP.yaml CLUSTER.xml OUTDIR" >&2
    exit 1
fi
sweep=$1 cluster=$2 outdir=$3
k=${SLURM_ARRAY_TASK_ID:?run as a job array: sbatch --array=1-N}
n=${SLURM_ARRAY_TASK_COUNT:?run as a job array: sbatch --array=1-N}
jobs=${SLURM_CPUS_PER_TASK:-$(nproc)}
protosim=${PROTOSIM:-$(dirname "$0")/../build/protosim}

mkdir -p "$outdir"
"$protosim" sweep "$sweep" --cluster "$cluster" --shard "$k/$n" -j "$jobs" \
    --json "$outdir/shard-$k.json" --csv "$outdir/shard-$k.csv" --no-progress --top 10
