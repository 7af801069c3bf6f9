# bash completion for protosim: subcommands, each subcommand's options, and files by kind
# (.yaml strategies and sweeps, .xml clusters, .json shards, .json[.gz] traces). Installed as
# share/bash-completion/completions/protosim. The subcommands and their options come from the
# protosim being completed (`protosim help --commands`, `protosim help --options NAME`: the
# option tables its parser reads), so they cannot drift from it; the values of options below
# are listed here.

# Files ending in one of the extensions (e.g. "yaml|yml"), and directories.
_protosim_files()
{
    local cur=$1 ext=$2
    COMPREPLY+=($(compgen -d -- "$cur"))
    local f
    while IFS= read -r f; do
        [[ -n $f ]] && COMPREPLY+=("$f")
    done < <(compgen -f -X "!*.@($ext)" -- "$cur")
}

_protosim()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    local bin=${COMP_WORDS[0]}
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "$("$bin" help --commands 2>/dev/null) help --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    shopt -s extglob
    case $prev in
    --cluster) _protosim_files "$cur" "xml|yaml|yml"; return ;;
    --devices) _protosim_files "$cur" "yaml|yml"; return ;;
    --shapes) _protosim_files "$cur" "txt"; return ;;
    --from-hwloc) _protosim_files "$cur" xml; return ;;
    --json | --trace | --overheads | --et) _protosim_files "$cur" json; return ;;
    --steps) COMPREPLY=($(compgen -W "all" -- "$cur")); return ;;
    --what-if) COMPREPLY=($(compgen -W "network: scale: remove: amp fuse-elementwise fuse-optimizer device: priority:gradients" -- "$cur")); return ;;
    --csv) _protosim_files "$cur" csv; return ;;
    --plot) _protosim_files "$cur" svg; return ;;
    --chakra) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --profile | --output) _protosim_files "$cur" json; return ;;
    -o) if [[ $cmd == profile ]]; then _protosim_files "$cur" json; else _protosim_files "$cur" "yaml|yml|xml"; fi; return ;;
    --fabric) COMPREPLY=($(compgen -W "fat-tree rail" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "yaml xml" -- "$cur")); return ;;
    --op) COMPREPLY=($(compgen -W "allreduce reduce-scatter all-gather all-to-all" -- "$cur")); return ;;
    --algo | --nccl-algo) COMPREPLY=($(compgen -W "auto ring tree nvls" -- "$cur")); return ;;
    --update) COMPREPLY=($(compgen -W "sgd adagrad adam" -- "$cur")); return ;;
    --precision) COMPREPLY=($(compgen -W "fp32 fp16 bf16" -- "$cur")); return ;;
    --dtype) COMPREPLY=($(compgen -W "fp16 bf16 fp8 fp32 tf32" -- "$cur")); return ;;
    --gemm-model) COMPREPLY=($(compgen -W "roofline tile" -- "$cur")); return ;;
    --tables | --rows | --dim | --batch | --pooling | --ids) return ;;
    --gpu | --device | --nodes | --racks | --nodes-per-leaf | --nics | --nic-gbps | --gpus-per-node | --oversubscription | --gpus | --sizes | \
        -j | --jobs | --shard | --top) return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$("$bin" help --options "$cmd" 2>/dev/null)" -- "$cur"))
        return
    fi
    case $cmd in
    run | sweep) _protosim_files "$cur" "yaml|yml" ;;
    merge) _protosim_files "$cur" json ;;
    replay) _protosim_files "$cur" "json|gz|et" ;;
    profile) _protosim_files "$cur" "json|gz" ;;
    compare) _protosim_files "$cur" "json|gz|yaml|yml" ;;
    cluster) COMPREPLY=($(compgen -W "dgx-v100 dgx-2 dgx-a100 dgx-h100 dgx-h200 dgx-b200 dgx-b300 dgx-h800 gb200-nvl72 gb300-nvl72" -- "$cur")) ;;
    kernel) if ((COMP_CWORD == 2)); then COMPREPLY=($(compgen -W "gemm bmm attention norm elementwise" -- "$cur")); fi ;;
    help) COMPREPLY=($(compgen -W "$("$bin" help --commands 2>/dev/null) --options --commands" -- "$cur")) ;;
    esac
}

complete -F _protosim protosim
