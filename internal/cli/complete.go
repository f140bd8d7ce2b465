package cli

import (
	"context"
	"sort"
	"strings"
)

// keywords are the SQL words the prompt completes.
var keywords = []string{"SELECT", "WITH", "ANONYMIZATION", "DIFFERENTIAL_PRIVACY", "OPTIONS", "FROM", "WHERE",
	"GROUP", "BY", "ORDER", "HAVING", "LIMIT", "JOIN", "USING", "ON", "AS", "AND", "OR", "NOT", "CLAMPED",
	"BETWEEN", "ANON_COUNT", "ANON_SUM", "ANON_AVG", "ANON_VAR_POP", "ANON_STDDEV_POP", "ANON_PERCENTILE_CONT",
	"ANON_QUANTILES", "COUNT", "SUM", "AVG", "DISTINCT", "EXPLAIN", "SHOW", "TABLES", "BUDGET", "LIMITS",
	"epsilon", "delta", "kappa", "max_groups_contributed", "privacy_unit_column"}

// completeWord is the prompt's tab completion (liner's WordCompleter): the word before the
// cursor completed as a SQL keyword, a relation the session may name or one of their
// columns (after "relation." only that relation's columns). It reads the schema only.
func (s *session) completeWord(line string, pos int) (head string, completions []string, tail string) {
	head, tail = line[:pos], line[pos:]
	start := strings.LastIndexFunc(head, func(r rune) bool {
		return !(r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) + 1
	word := head[start:]
	head = head[:start]
	if word == "" {
		return head, nil, tail
	}
	rels, _ := s.relations(context.Background())
	var cands []string
	if rel, col, dotted := strings.Cut(word, "."); dotted {
		for _, r := range rels {
			if strings.EqualFold(r.Name, rel) {
				for _, c := range r.Columns {
					cands = append(cands, rel+"."+c.Name)
				}
			}
		}
		word = rel + "." + col
	} else {
		lower := strings.ToLower(word) == word
		for _, k := range keywords {
			if lower {
				k = strings.ToLower(k)
			}
			cands = append(cands, k)
		}
		for _, r := range rels {
			cands = append(cands, r.Name)
			for _, c := range r.Columns {
				cands = append(cands, c.Name)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if len(c) >= len(word) && strings.EqualFold(c[:len(word)], word) && !seen[c] {
			seen[c] = true
			completions = append(completions, c)
		}
	}
	sort.Strings(completions)
	return head, completions, tail
}
