# Sourced by scripts/test.sh and .ci/run: names each phase as it starts and, at the end, prints
# every phase's wall time and the CPU time (user + system) of the processes it ran. On a shared or
# busy machine the wall times grow; the CPU times are what a quiet machine with the same cores
# would spend, so they are the figures to compare between runs.
#
# phase NAME   ends the current phase (if any) and starts NAME
# phase_end    ends the current phase
# phase_report prints the table (a phase run in the background is reported when it is waited for)

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
