package main

import (
	"math"
	"sort"
)

// dist summarises samples; all comparisons use the median.
type dist struct {
	P50     float64   `json:"p50"`
	P90     float64   `json:"p90"`
	Max     float64   `json:"max"`
	N       int       `json:"n"`
	Samples []float64 `json:"samples"`
}

func distOf(samples []float64) dist {
	return dist{
		P50:     percentile(samples, 50),
		P90:     percentile(samples, 90),
		Max:     percentile(samples, 100),
		N:       len(samples),
		Samples: roundAll(samples),
	}
}

// percentile interpolates linearly between the closest ranks; it is 0 for
// no samples.
func percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return round3(s[lo] + (s[hi]-s[lo])*(pos-float64(lo)))
}

func median(samples []float64) float64 { return percentile(samples, 50) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func roundAll(vs []float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = round3(v)
	}
	return out
}
