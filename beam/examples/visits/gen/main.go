// Command gen writes the restaurant visits of examples/visits: a week of
// visits to one restaurant, one CSV line per visit, deterministic (the same
// file on every machine and Go version: it uses its own SplitMix64 generator,
// not math/rand).
//
//	cd beam && go run ./examples/visits/gen > examples/visits/visits.csv
//
// The data is synthetic and made by this program, so it is covered by the
// project's licence.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

// Header is the first line of the CSV.
const Header = "visitor_id,weekday,entered,minutes_spent,euros_spent"

var weekdays = [7]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// hourWeights is how busy each opening hour (9:00 to 21:59) is: lunch and
// dinner peaks.
var hourWeights = [13]int{2, 3, 5, 10, 12, 6, 3, 3, 4, 8, 11, 9, 4}

// dayWeights is how busy each weekday is: quiet Monday, busy weekend.
var dayWeights = [7]int{6, 7, 8, 9, 12, 14, 10}

// splitmix is SplitMix64 (Steele, Lea, Flood 2014): a fixed algorithm, so the
// output never depends on the Go version.
type splitmix struct{ state uint64 }

func (r *splitmix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n) (with a bias below 2^-40 for these n).
func (r *splitmix) intn(n int) int { return int(r.next() % uint64(n)) }

func (r *splitmix) weighted(w []int) int {
	total := 0
	for _, x := range w {
		total += x
	}
	k := r.intn(total)
	for i, x := range w {
		if k < x {
			return i
		}
		k -= x
	}
	return len(w) - 1
}

// Write writes rows visits (after the header) to w. Visitors come back: each
// of about rows/5 visitors makes 1 to 9 visits. One visitor also comes in at
// 23:10 on a Sunday, the only visit of that hour, which private partition
// selection must not release.
func Write(w io.Writer, rows int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, Header)
	r := &splitmix{state: 20240611}
	visitors := max(rows/5, 1)
	written := 0
	if rows > 0 {
		fmt.Fprintf(bw, "v%05d,Sunday,23:10,35,42.00\n", visitors)
		written++
	}
	for written < rows {
		id := r.intn(visitors)
		visits := 1 + r.intn(9)
		for i := 0; i < visits && written < rows; i++ {
			day := weekdays[r.weighted(dayWeights[:])]
			hour := 9 + r.weighted(hourWeights[:])
			minute := r.intn(60)
			minutes := 15 + r.intn(46) // 15 to 60
			if hour >= 18 {
				minutes += 30 // dinner is longer
			}
			cents := 500 + r.intn(1500) + minutes*30 // 5 to 20 euros, plus time
			fmt.Fprintf(bw, "v%05d,%s,%02d:%02d,%d,%d.%02d\n", id, day, hour, minute, minutes, cents/100, cents%100)
			written++
		}
	}
	return bw.Flush()
}

func main() {
	rows := flag.Int("rows", 10000, "number of visits")
	flag.Parse()
	if err := Write(os.Stdout, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
