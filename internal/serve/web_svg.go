package serve

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/entrytext"
)

// The web page's charts: SVG drawn here, sized by a viewBox so that they
// shrink to a phone's width, coloured by classes of style.css (an
// attribute style would be inline style, which the pages' policy
// refuses). Every text in them is escaped; the numbers are the server's.

// svgOpen starts an SVG of the viewBox w×h with a title (its accessible
// name) and a class.
func svgOpen(b *strings.Builder, class string, w, h int, title string) {
	fmt.Fprintf(b, `<svg class="chart %s" viewBox="0 0 %d %d" role="img" preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		class, w, h, html.EscapeString(title))
}

// sparkline draws counts (oldest first) as a small line with its area.
func sparkline(counts []int, title string) template.HTML {
	const w, h, pad = 120, 24, 2
	var b strings.Builder
	svgOpen(&b, "spark", w, h, title)
	top := 1
	for _, n := range counts {
		top = max(top, n)
	}
	if len(counts) < 2 {
		counts = append(counts, 0, 0)
	}
	step := float64(w-2*pad) / float64(len(counts)-1)
	var pts []string
	for i, n := range counts {
		x := pad + float64(i)*step
		y := float64(h-pad) - float64(n)/float64(top)*float64(h-2*pad)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	fmt.Fprintf(&b, `<polygon class="area" points="%d,%d %s %d,%d"/>`, pad, h-pad, strings.Join(pts, " "), w-pad, h-pad)
	fmt.Fprintf(&b, `<polyline class="line" fill="none" points="%s"/>`, strings.Join(pts, " "))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// series is one named kind of a stacked chart, and its class.
type series struct{ Name, Class string }

// stackBar is one bar of a stacked chart: its time and a value per series.
type stackBar struct {
	At     time.Time
	Values []float64
}

// stackedBars draws bars over time, each stacked of the series' values,
// with a legend, the value axis' top, and times under the first, middle
// and last bars.
func stackedBars(bars []stackBar, ss []series, layout, title string) template.HTML {
	const w, h, left, top, bottom = 640, 200, 40, 24, 22
	var b strings.Builder
	svgOpen(&b, "stack", w, h, title)
	peak := 0.0
	for _, bar := range bars {
		sum := 0.0
		for _, v := range bar.Values {
			sum += v
		}
		peak = max(peak, sum)
	}
	for i, s := range ss {
		x := left + i*130
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="4" width="10" height="10"/><text class="legend" x="%d" y="13">%s</text>`,
			s.Class, x, x+14, html.EscapeString(s.Name))
	}
	plotH := float64(h - top - bottom)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, left-4, top+8, number(peak))
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">0</text>`, left-4, h-bottom)
	if len(bars) == 0 || peak == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">nothing yet</text></svg>`, (w+left)/2, h/2)
		return template.HTML(b.String())
	}
	slot := float64(w-left) / float64(len(bars))
	for i, bar := range bars {
		x := float64(left) + float64(i)*slot
		y := float64(h - bottom)
		var parts []string
		for j, v := range bar.Values {
			if v <= 0 {
				continue
			}
			hh := v / peak * plotH
			y -= hh
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, ss[j].Class, x+slot*0.1, y, max(slot*0.8, 0.5), hh)
			parts = append(parts, fmt.Sprintf("%s %s", number(v), ss[j].Name))
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, `<rect class="hit" x="%.1f" y="%d" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`,
				x, top, slot, plotH, bar.At.UTC().Format(layout), html.EscapeString(strings.Join(parts, ", ")))
		}
	}
	for _, i := range []int{0, len(bars) / 2, len(bars) - 1} {
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case len(bars) - 1:
			anchor = "end"
		}
		x := float64(left) + (float64(i)+0.5)*slot
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x, h-6, anchor, bars[i].At.UTC().Format(layout))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// intervalPoint is one scheduler decision: when, the interval chosen and
// the EWMA of the posting interval it knew (0: none yet).
type intervalPoint struct {
	At             time.Time
	IntervalSec    float64
	EWMASec        float64
	Reason, Action string
}

// intervalChart draws the interval each decision chose (a step line) and
// the EWMA of the posting interval (a line), on a logarithmic scale of
// time spans, oldest decision on the left.
func intervalChart(pts []intervalPoint, title string) template.HTML {
	const w, h, left, right, top, bottom = 640, 220, 48, 8, 24, 22
	var b strings.Builder
	svgOpen(&b, "interval", w, h, title)
	fmt.Fprintf(&b, `<rect class="s-int" x="%d" y="4" width="10" height="10"/><text class="legend" x="%d" y="13">interval chosen</text>`, left, left+14)
	fmt.Fprintf(&b, `<rect class="s-ewma" x="%d" y="4" width="10" height="10"/><text class="legend" x="%d" y="13">EWMA of the posting interval</text>`, left+140, left+154)
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">no decision yet</text></svg>`, (w+left)/2, h/2)
		return template.HTML(b.String())
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		for _, v := range []float64{p.IntervalSec, p.EWMASec} {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 60, 3600
	}
	lo, hi = math.Log10(max(lo/2, 1)), math.Log10(hi*2)
	plotW, plotH := float64(w-left-right), float64(h-top-bottom)
	y := func(v float64) float64 { return float64(top) + (hi-math.Log10(max(v, 1)))/(hi-lo)*plotH }
	t0, t1 := pts[0].At, pts[len(pts)-1].At
	span := t1.Sub(t0).Seconds()
	x := func(i int, at time.Time) float64 {
		if span <= 0 {
			return float64(left) + plotW*float64(i+1)/float64(len(pts)+1)
		}
		return float64(left) + at.Sub(t0).Seconds()/span*plotW
	}
	for _, g := range []struct {
		sec   float64
		label string
	}{{60, "1m"}, {300, "5m"}, {900, "15m"}, {3600, "1h"}, {6 * 3600, "6h"}, {86400, "1d"}, {7 * 86400, "7d"}, {30 * 86400, "30d"}} {
		if l := math.Log10(g.sec); l < lo || l > hi {
			continue
		}
		gy := y(g.sec)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/><text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`,
			left, gy, w-right, gy, left-4, gy+4, g.label)
	}
	var steps, ewma []string
	for i, p := range pts {
		px := x(i, p.At)
		if p.IntervalSec > 0 {
			if len(steps) > 0 {
				prev := steps[len(steps)-1]
				_, py, _ := strings.Cut(prev, ",")
				steps = append(steps, fmt.Sprintf("%.1f,%s", px, py))
			}
			steps = append(steps, fmt.Sprintf("%.1f,%.1f", px, y(p.IntervalSec)))
		}
		if p.EWMASec > 0 {
			ewma = append(ewma, fmt.Sprintf("%.1f,%.1f", px, y(p.EWMASec)))
		}
	}
	if len(steps) > 0 {
		fmt.Fprintf(&b, `<polyline class="l-int" fill="none" points="%s"/>`, strings.Join(steps, " "))
	}
	if len(ewma) > 0 {
		fmt.Fprintf(&b, `<polyline class="l-ewma" fill="none" points="%s"/>`, strings.Join(ewma, " "))
	}
	for i, p := range pts {
		if p.IntervalSec <= 0 {
			continue
		}
		tip := fmt.Sprintf("%s: %s (%s), interval %s", p.At.UTC().Format("2006-01-02 15:04Z"), p.Action, p.Reason, spanOf(p.IntervalSec))
		if p.EWMASec > 0 {
			tip += ", EWMA " + spanOf(p.EWMASec)
		}
		fmt.Fprintf(&b, `<circle class="p-int" cx="%.1f" cy="%.1f" r="3"><title>%s</title></circle>`, x(i, p.At), y(p.IntervalSec), html.EscapeString(tip))
	}
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d">%s</text><text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`,
		left, h-6, t0.UTC().Format("01-02 15:04Z"), w-right, h-6, t1.UTC().Format("01-02 15:04Z"))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// fetchStrip draws each fetch as a tick on a time line, coloured by its
// outcome (the classes of outcomeClass).
func fetchStrip(at []time.Time, outcomes []string, from, to time.Time, title string) template.HTML {
	const w, h, left, right = 640, 56, 8, 8
	var b strings.Builder
	svgOpen(&b, "strip", w, h, title)
	legend := []series{{"success", "s-ok"}, {"304 not modified", "s-nm"}, {"error", "s-err"}}
	for i, s := range legend {
		x := left + i*150
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="4" width="10" height="10"/><text class="legend" x="%d" y="13">%s</text>`, s.Class, x, x+14, s.Name)
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="44" x2="%d" y2="44"/>`, left, w-right)
	span := to.Sub(from).Seconds()
	for i, t := range at {
		x := float64(left) + float64(w-left-right)/2
		if span > 0 {
			x = float64(left) + t.Sub(from).Seconds()/span*float64(w-left-right)
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="20" width="3" height="22"><title>%s: %s</title></rect>`,
			outcomeClass(outcomes[i]), x-1.5, t.UTC().Format("2006-01-02 15:04:05Z"), html.EscapeString(outcomes[i]))
	}
	if len(at) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="36" text-anchor="middle">no fetch yet</text>`, w/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// outcomeClass is the class of an outcome (outcomeOf): success, 304, or
// an error.
func outcomeClass(o string) string {
	switch o {
	case "ok", "same_body":
		return "s-ok"
	case "not_modified":
		return "s-nm"
	}
	return "s-err"
}

// bar is one bar of a bar list: a label, a link ("" for none), a value.
type bar struct {
	Label, Href string
	Value       float64
	Text        string // the value as shown; number(Value) when ""
}

// hbars draws a horizontal bar per item, largest first as given.
func hbars(items []bar, class, title string) template.HTML {
	const w, row, labelW = 480, 22, 180
	h := max(len(items), 1)*row + 4
	var b strings.Builder
	svgOpen(&b, "bars", w, h, title)
	if len(items) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="16" text-anchor="middle">none</text></svg>`, w/2)
		return template.HTML(b.String())
	}
	peak := 0.0
	for _, it := range items {
		peak = max(peak, it.Value)
	}
	for i, it := range items {
		y := i*row + 2
		label := html.EscapeString(entrytext.Cut(it.Label, 28))
		if it.Href != "" {
			label = fmt.Sprintf(`<a href="%s">%s</a>`, html.EscapeString(it.Href), label)
		}
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">%s</text>`, labelW-6, y+15, label)
		bw := 0.0
		if peak > 0 {
			bw = it.Value / peak * float64(w-labelW-60)
		}
		text := it.Text
		if text == "" {
			text = number(it.Value)
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="%d" width="%.1f" height="%d"/><text class="value" x="%.1f" y="%d">%s</text>`,
			class, labelW, y+3, max(bw, 1), row-6, float64(labelW)+max(bw, 1)+4, y+15, html.EscapeString(text))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// number writes v briefly: 12, 3.4k, 5.6M.
func number(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// spanOf writes seconds as a time span: 45s, 12m, 3h20m, 2d4h.
func spanOf(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		if m := int(d.Minutes()) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", int(d.Hours()), m)
		}
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	days := int(d.Hours()) / 24
	if hh := int(d.Hours()) % 24; hh != 0 {
		return fmt.Sprintf("%dd%dh", days, hh)
	}
	return fmt.Sprintf("%dd", days)
}
