# bash completion for xdpcap(8)                          -*- shell-script -*-
# SPDX-License-Identifier: GPL-2.0-only
# Installed as .../bash-completion/completions/xdpcap; needs bash-completion.

# Options with a fixed set of values (a new one is one line here, and is
# offered as an option too), then all the others.
declare -gA _xdpcap_values=(
    [-Q]="in out inout" [--direction]="in out inout"
    [--xdp-mode]="native generic auto"
    [--at]="entry exit entry,exit"
    [--time-stamp-precision]="micro nano"
    [-y]="EN10MB" [--linktype]="EN10MB"
)
_xdpcap_options="-i --interface -w --write -r --read -s --snapshot-length -c --count
    -C --file-size -G --rotate-seconds -W --file-count -z --postrotate-command
    -U --packet-buffered -p --no-promiscuous-mode -F --filter-file
    -d --dump-filter -D --list-interfaces -v --verbose -q --quiet --ring-pages --program
    -B --buffer-size --sample -Z --relinquish-privileges
    -L --list-data-link-types -K --dont-verify-checksums --immediate-mode --print-cpu
    --nano --rss-type-comments
    -e -x -X -A -t -n -N -S --number -l --print --drops
    -k --pid --follow-forks --pname --cgroup --container --container-netns --tls-keylog
    --tls-keys --tls-keys-file --tls-keys-from-start --discard-secrets
    -h --help --version"

_xdpcap()
{
    local cur prev words cword split
    _init_completion -s || return

    case $prev in
        -i | --interface)
            # Only interfaces no earlier -i names: xdpcap refuses one given twice.
            local -A given=()
            local i
            for ((i = 1; i < cword; i++)); do
                if [[ ${words[i - 1]} == -i || ${words[i - 1]} == --interface ]]; then
                    given[${words[i]}]=1
                elif [[ ${words[i]} == --interface=* ]]; then
                    given[${words[i]#--interface=}]=1
                fi
            done
            local name candidates=()
            for name in $(command ls /sys/class/net 2>/dev/null); do
                [[ -v given[$name] ]] || candidates+=("$name")
            done
            COMPREPLY=($(compgen -W "${candidates[*]}" -- "$cur"))
            return
            ;;
        -w | --write | -r | --read)
            _filedir
            [[ -z $cur || $cur == - ]] && COMPREPLY+=(-)
            return
            ;;
        -F | --filter-file | --tls-keylog | --tls-keys-file)
            _filedir
            return
            ;;
        -z | --postrotate-command)
            # A command in two PATH directories (/bin and /usr/bin) once.
            COMPREPLY=($(compgen -c -- "$cur" | LC_ALL=C sort -u))
            return
            ;;
        -s | --snapshot-length | -c | --count | --ring-pages | -B | --buffer-size | --sample | \
            -C | --file-size | -G | --rotate-seconds | -W | --file-count)
            return # a number
            ;;
        -Z | --relinquish-privileges)
            COMPREPLY=($(compgen -u -- "$cur"))
            return
            ;;
    esac
    if [[ -v _xdpcap_values[$prev] ]]; then
        COMPREPLY=($(compgen -W "${_xdpcap_values[$prev]}" -- "$cur"))
        return
    fi
    $split && return

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$_xdpcap_options ${!_xdpcap_values[*]}" -- "$cur"))
    fi
} &&
    complete -F _xdpcap xdpcap
