#!/bin/zsh -f
# zsh_complete.zsh FPATH_DIR LINE: what zsh completion offers after typing
# LINE and TAB in an interactive zsh (run in a pseudo-terminal) whose fpath
# starts with FPATH_DIR. Prints the candidates, one a line, sorted.
zmodload zsh/zpty || exit 2
zpty z zsh -f -i || exit 2
# Every candidate handed to compadd is also printed, marked. The markers are
# spelt with an empty quote inside in what is typed, so that the terminal's
# echo of these lines (which may come late on a loaded machine) never
# contains them: only what the commands print does.
zpty -w z "fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z 'compadd() { local -a __h; builtin compadd -O __h "$@"; print -rl -- ${__h/#/__CA""ND__}; builtin compadd "$@"; }'
zpty -w z 'bindkey "^I" complete-word; _xp_done() { print -r -- __DO""NE__; }; print __REA""DY__'
local out="" chunk
integer i
for i in {1..100}; do
    while zpty -rt z chunk; do out+=$chunk; done
    [[ $out == *__READY__$'\r'* ]] && break
    sleep 0.05
done
out=""
# _main_complete runs comppostfuncs (once) when the completion is over.
zpty -w z 'comppostfuncs=(_xp_done)'
zpty -n -w z "$2"$'\t'
for i in {1..200}; do
    while zpty -rt z chunk; do out+=$chunk; done
    [[ $out == *__DONE__* ]] && break
    sleep 0.05
done
[[ $out == *__DONE__* ]] || { print -u2 "zsh_complete: no end of completion within 10 s"; exit 1; }
zpty -d z
local -a cands
for line in ${(f)out}; do
    [[ $line == *__CAND__* ]] && cands+=(${${line##*__CAND__}%%$'\r'*})
done
print -rl -- ${(ou)cands}
