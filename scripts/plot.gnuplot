# plot.gnuplot - the demo's chart: what a flooding source offered and what the hosts let
# through, per second, with the agents alone (left), as a cluster (middle) and as a
# cluster whose adaptive rule gets busy signals from a service (right).
#
#   gnuplot -e "data='build/demo.dat'; out='build/demo.png'" scripts/plot.gnuplot
#
# `make demo` writes the data (scripts/demo.sh) and draws it; `make plot` redraws it.
# The data file is gnuplot itself: the run's parameters (source, offer, rate, burst,
# hosts, secs, budget, admitted_alone, admitted_cluster), then one datablock per run,
# $alone and $cluster, with a line per sample: the time since the spray started (s),
# then over the second before it: admitted/s by host 1..hosts, admitted/s in total and
# offered/s (admitted + dropped, all hosts). Then run 3's parameters (rule, adaptive_secs,
# busy_from, busy_to: when the busy signals started and stopped, busy_gap) and $adaptive,
# the same columns and then the rule's limit in force (/s). A data file without them
# (an older demo's) is drawn without the third panel.

if (!exists("data")) data = "build/demo.dat"
if (!exists("out")) out = "build/demo.png"
load data

panels = exists("busy_from") ? 3 : 2
set terminal pngcairo size (panels == 3 ? 1650 : 1100),520 font "DejaVu Sans,10"
set output out

# A log(1 + y) axis: the offer (thousands/s), the total admitted (hundreds) and each
# host's share (tens) all stay readable, and an empty second (0/s) is still drawn.
set nonlinear y via log10(y + 1) inverse 10**y - 1
set yrange [0:offer * 3]
set ytics ("0" 0, "10" 10, "30" 30, "100" 100, "300" 300, "1000" 1000, "3000" 3000, "10000" 10000)
set xrange [0:secs]
set grid xtics ytics lc "gray85" lt 1
set border 3
set xtics nomirror
set ytics nomirror
set xlabel "time since the client started sending (s)"
set ylabel sprintf("packets per second from %s (log scale)", source)
total = hosts + 2
offered = hosts + 3
hostcolor(i) = i == 1 ? "#1f77b4" : i == 2 ? "#2ca02c" : i == 3 ? "#9467bd" : "#8c564b"

set multiplot layout 1,panels \
    title sprintf("%s sends %d packets/s, sprayed evenly over %d hosts: its budget is %d at once, then %d per second", \
                  source, offer, hosts, burst, rate) font ",12"

set label 1 sprintf("each host grants the whole budget rate: %d x %d/s in all", hosts, rate) \
    at 1.5, rate * 1.35 left font ",9" tc "gray30"
# One legend for both panels, in the empty bottom of the first one.
set key inside center bottom horizontal maxrows 3 samplen 2.5 opaque box lc "gray70" font ",10"
set title sprintf("Agents alone: %d admitted in %d s = %.1f x the budget", \
                  admitted_alone, secs, 1.0 * admitted_alone / budget) font ",11"
plot $alone using 1:offered with lines lw 4 lc "gray75" title "offered (all hosts)", \
     for [i = 1:hosts] $alone using 1:i + 1 with lines lw 1.5 lc rgb hostcolor(i) \
         title sprintf("admitted by host %d", i), \
     $alone using 1:total with lines lw 3 lc "black" title "admitted, all hosts", \
     rate with lines lw 2 dt (8, 6) lc "red" title sprintf("budget rate (%d/s)", rate)

unset key
unset ylabel
# Each host granted the burst before hearing from the others; the debits that follow
# take the buckets below zero, and the dip after the start pays that extra back.
set label 1 sprintf("at first, each of the %d hosts granted the burst:\nthe dip that follows pays the extra back", hosts) \
    at 1.6, 4 left font ",9" tc "gray30"
set title sprintf("Agents in a cluster: %d admitted in %d s = %.1f x the budget", \
                  admitted_cluster, secs, 1.0 * admitted_cluster / budget) font ",11"
plot $cluster using 1:offered with lines lw 4 lc "gray75", \
     for [i = 1:hosts] $cluster using 1:i + 1 with lines lw 1.5 lc rgb hostcolor(i), \
     $cluster using 1:total with lines lw 3 lc "black", \
     rate with lines lw 2 dt (8, 6) lc "red"

if (panels == 3) {
    # The limit in force (red steps) falls to half the admitted rate on a busy signal (at
    # most once a second), and grows x3 a second once the signals stop.
    set xrange [0:adaptive_secs]
    set object 1 rect from busy_from, graph 0 to busy_to, graph 1 behind fc "orange" fs transparent solid 0.2 noborder
    set label 1 sprintf("h1's service is busy:\n\"BUSY %s\" every %g s", rule, busy_gap) \
        at busy_from + 0.15, 3 left font ",9" tc "gray30"
    set key inside right bottom samplen 2.5 opaque box lc "gray70" font ",10"
    set title sprintf("Cluster, rule %s adaptive: busy signals for %.0f s", rule, busy_to - busy_from) font ",11"
    plot $adaptive using 1:offered with lines lw 4 lc "gray75" notitle, \
         for [i = 1:hosts] $adaptive using 1:i + 1 with lines lw 1.5 lc rgb hostcolor(i) notitle, \
         $adaptive using 1:total with lines lw 3 lc "black" notitle, \
         $adaptive using 1:(column(hosts + 4)) with steps lw 2 dt (8, 6) lc "red" title "the rule's limit in force"
}

unset multiplot
