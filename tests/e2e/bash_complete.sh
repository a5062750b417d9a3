#!/bin/bash
# bash_complete.sh COMPLETION_FILE WORD... : what bash completion offers for
# the command line WORD... (the last word is the one being completed; pass ""
# after a space). Words are given as bash would split them, so "--opt=" is
# "--opt" "=" "". Prints the candidates, one a line.
set -u
file=$1
shift
# shellcheck disable=SC1091
source /usr/share/bash-completion/bash_completion || exit 2
# shellcheck disable=SC1090
source "$file" || exit 2
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=""
for w in "${COMP_WORDS[@]}"; do
    case $w in
        =) COMP_LINE+="=" ;;
        *) [[ -z $COMP_LINE || $COMP_LINE == *= ]] && COMP_LINE+="$w" || COMP_LINE+=" $w" ;;
    esac
done
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_xdpcap "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
