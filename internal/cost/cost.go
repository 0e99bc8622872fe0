// Package cost is the one way Akira rounds and writes an amount of money in US dollars, on every surface
// a person reads it: the dashboard, the GitHub comments and check runs, and the command line.
//
// The rule: an amount is rounded to a hundredth of a cent ($0.0001), half away from zero, and a
// positive amount smaller than that counts as $0.0001, so that work that called a model never reads
// "$0.00". It is written with as many of those four decimals as it needs and at least two: "$0.0042",
// "$0.012", "$0.50", "$1.2345". A total is the sum of its parts rounded first, so that the tasks'
// costs a page shows add up to the run's cost it shows beside them.
package cost

import (
	"fmt"
	"math"
	"strings"
)

// unitsPerDollar: the rounding unit is a hundredth of a cent.
const unitsPerDollar = 10_000

// Units is usd rounded to hundredths of a cent; a positive amount never rounds to zero.
func Units(usd float64) int64 {
	if math.IsNaN(usd) || math.IsInf(usd, 0) {
		return 0
	}
	u := int64(math.Round(usd * unitsPerDollar))
	if u == 0 && usd > 0 {
		return 1
	}
	return u
}

// Round is usd rounded as Units rounds it, in dollars.
func Round(usd float64) float64 { return float64(Units(usd)) / unitsPerDollar }

// Sum is the total of amounts each rounded first, in dollars: what Format shows of it is the sum of
// what it shows of each part.
func Sum(usd ...float64) float64 {
	var u int64
	for _, v := range usd {
		u += Units(v)
	}
	return float64(u) / unitsPerDollar
}

// Format writes usd by the package's rule: "$0.0042", "$0.012", "$0.50", "$12.30", "$0.00".
func Format(usd float64) string {
	u := Units(usd)
	sign := ""
	if u < 0 {
		sign, u = "-", -u
	}
	frac := fmt.Sprintf("%04d", u%unitsPerDollar)
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s$%d.%s", sign, u/unitsPerDollar, frac)
}
