package analyzer

import (
	"strings"
	"unicode/utf8"
)

// Closest returns the candidate nearest to word (ignoring case) by edit distance (insertions,
// deletions, substitutions and transpositions of adjacent letters), or "" when none is near
// enough to be a likely misspelling: at most one edit for words of up to four letters, two up
// to eight, three beyond. Callers pass only names the user may see (the columns of the
// relations in scope, the relations analysts can read, the functions and options dpsql
// accepts), so a suggestion never reveals a name the analyst could not have listed.
// Generated names (_dp_...) are never suggested.
func Closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	n := utf8.RuneCountInString(w)
	limit := 1
	switch {
	case n > 8:
		limit = 3
	case n > 4:
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w || strings.HasPrefix(lc, "_dp_") {
			continue
		}
		if d := editDistance(w, lc); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// didYouMean is the hint for a misspelled name: "did you mean x?", or "" without a near
// candidate.
func didYouMean(word string, candidates []string) string {
	if c := Closest(word, candidates); c != "" {
		return "did you mean " + c + "?"
	}
	return ""
}

// withSuggestion puts a "did you mean" before a hint.
func withSuggestion(suggestion, hint string) string {
	switch {
	case suggestion == "":
		return hint
	case hint == "":
		return suggestion
	}
	return suggestion + " " + hint
}

// editDistance is the optimal string alignment distance between a and b, over runes.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
