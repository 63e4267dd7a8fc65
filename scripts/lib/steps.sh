# Sourced by scripts/test.sh and scripts/test-aarch64-lane.sh: numbered steps with their times.
#   STEP_BANNER  what each step's announcement starts with ("test", "aarch64 lane")
#   STEP_LABEL   what each summary line puts before the step's name ("" or "aarch64: ")
# `step NAME...` closes the previous step (its own time goes to `timings`) and announces the next with the
# time since the start and the disk space left; `printf '%s\n' "${timings[@]}"` lists each step's own time.
start=$SECONDS
step_name=
step_start=$SECONDS
timings=()
step() {
    [ -n "$step_name" ] && timings+=("$(printf '%5d s  %s%s' $((SECONDS - step_start)) "${STEP_LABEL:-}" "$step_name")")
    step_name=$*
    step_start=$SECONDS
    printf '\n=== %s: %s (%ds, %s free)\n' "${STEP_BANNER:-step}" "$*" $((SECONDS - start)) "$(free_disk)"
}
# The space left where .build lives (a full run from a clean clone writes about 7.5 GB there).
free_disk() {
    df -Ph . 2>/dev/null | awk 'NR == 2 { print $4 }'
}
