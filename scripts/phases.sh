# shellcheck shell=bash
# Sourced by scripts/test.sh and .ci/run: names each phase as it starts and, at the end, prints
# every phase's wall time and the CPU time (user + system) of the processes it ran. On a shared or
# busy machine the wall times grow; the CPU times are what a quiet machine with the same cores
# would spend, so they are the figures to compare between runs.
#
# phase NAME   ends the current phase (if any) and starts NAME
# phase_end    ends the current phase
# phase_background NAME LOG COMMAND...
#              runs COMMAND (niced, output to LOG) beside the phases that follow, on the cores
#              they leave idle; it is not this shell's child, so its CPU time is its own row
# phase_wait NAME
#              waits for that command; its status is phase_wait's
# phase_report prints the table

phase_ticks_per_second=$(getconf CLK_TCK)
phase_names=()
phase_walls=()
phase_cpus=()
phase_current=""
phase_origin_ns=$(date +%s%N)

# CPU time, in clock ticks, of every child this shell has waited for (fields 16 and 17 of
# /proc/PID/stat: cutime and cstime, which include their own waited-for descendants).
phase_children_ticks() {
  local stat
  read -r stat <"/proc/$$/stat"
  local -a fields
  read -ra fields <<<"${stat##*) }"
  echo $((fields[13] + fields[14]))
}

phase_end() {
  [[ -n $phase_current ]] || return 0
  local now ticks
  now=$(date +%s%N)
  ticks=$(phase_children_ticks)
  phase_names+=("$phase_current")
  phase_walls+=($(((now - phase_start_ns) / 1000000)))
  phase_cpus+=($(((ticks - phase_start_ticks) * 1000 / phase_ticks_per_second)))
  phase_current=""
}

phase() {
  phase_end
  phase_current=$1
  phase_start_ns=$(date +%s%N)
  phase_start_ticks=$(phase_children_ticks)
  echo "== $1"
}

phase_background_dirs=()

phase_background() {
  local name=$1 log=$2 dir
  shift 2
  dir=$(mktemp -d)
  phase_background_dirs+=("$dir")
  printf '%s\n' "$name" >"$dir/name"
  # setsid -f: a session of its own (so that an interrupted run can end it whole) whose leader is
  # not this shell's child, so that its CPU time does not land in whichever phase reaps it.
  # shellcheck disable=SC2016 # Expanded by the inner bash.
  setsid -f bash -c 'dir=$1 log=$2; shift 2; echo $$ >"$dir/pid"
    status=0; /usr/bin/time -f "%e %U %S" -o "$dir/time" nice -n 10 "$@" >"$log" 2>&1 || status=$?
    echo "$status" >"$dir/status"' phase_background "$dir" "$log" "$@" </dev/null
  echo "== started in the background: $name (output: $log)"
}

phase_wait() {
  local dir="" candidate
  for candidate in "${phase_background_dirs[@]}"; do
    [[ $(<"$candidate/name") == "$1" ]] && dir=$candidate
  done
  [[ -n $dir ]] || { echo "phase_wait: no background phase '$1'" >&2; return 2; }
  while [[ ! -s $dir/status ]]; do sleep 1; done
  local elapsed user system
  read -r elapsed user system < <(tail -n 1 "$dir/time")
  phase_names+=("$1 (in the background)")
  phase_walls+=("$(awk -v s="$elapsed" 'BEGIN { printf "%d", s * 1000 }')")
  phase_cpus+=("$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%d", (u + s) * 1000 }')")
  return "$(<"$dir/status")"
}

# Ends the background phases still running (an interrupted or failed run) and removes their notes.
phase_cleanup() {
  local dir
  for dir in "${phase_background_dirs[@]}"; do
    if [[ ! -s $dir/status && -s $dir/pid ]]; then kill -- -"$(<"$dir/pid")" 2>/dev/null || true; fi
    rm -rf "$dir"
  done
}

phase_seconds() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

phase_report() {
  phase_end
  local i total_cpu=0
  echo "== phase times (wall: elapsed; cpu: user + system of the phase's processes)"
  printf '%8s %8s  %s\n' wall cpu phase
  for i in "${!phase_names[@]}"; do
    printf '%7ss %7ss  %s\n' "$(phase_seconds "${phase_walls[i]}")" \
      "$(phase_seconds "${phase_cpus[i]}")" "${phase_names[i]}"
    total_cpu=$((total_cpu + phase_cpus[i]))
  done
  printf '%7ss %7ss  %s\n' "$(phase_seconds $((($(date +%s%N) - phase_origin_ns) / 1000000)))" \
    "$(phase_seconds "$total_cpu")" "total (wall: since the first phase began)"
}
