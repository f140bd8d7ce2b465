package dptest

import (
	"path/filepath"
	"testing"
)

func TestParseTextProto(t *testing.T) {
	src := `
# comment
voting_parameters { number_of_votes: 9 }
case {
  name: "Small " "raw input"  # trailing comment
  params {
    epsilon: 1.0986  # = log(3)
    noise_type: GAUSSIAN
    raw: []
    raw: [1, 2,
          3]
    raw: 4
    neg: -1e-5
  }
}
case { name: 'second' }
`
	m, err := ParseTextProto(src)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Message("voting_parameters").Int("number_of_votes", 0); v != 9 {
		t.Errorf("votes = %d, want 9", v)
	}
	cs := m.Messages("case")
	if len(cs) != 2 {
		t.Fatalf("got %d cases, want 2", len(cs))
	}
	if got := cs[0].String("name", ""); got != "Small raw input" {
		t.Errorf("name = %q", got)
	}
	p := cs[0].Message("params")
	if e, _ := p.Float("epsilon", 0); e != 1.0986 {
		t.Errorf("epsilon = %v", e)
	}
	if p.Enum("noise_type", "") != "GAUSSIAN" {
		t.Errorf("noise_type = %q", p.Enum("noise_type", ""))
	}
	raw, err := p.Ints("raw")
	if err != nil || len(raw) != 4 || raw[0] != 1 || raw[3] != 4 {
		t.Errorf("raw = %v, %v; want [1 2 3 4]", raw, err)
	}
	if v, _ := p.Float("neg", 0); v != -1e-5 {
		t.Errorf("neg = %v", v)
	}
	if v, _ := p.Float("absent", 7); v != 7 {
		t.Errorf("default = %v", v)
	}
	if cs[1].String("name", "") != "second" {
		t.Errorf("second name = %q", cs[1].String("name", ""))
	}
}

func TestParseTextProtoErrors(t *testing.T) {
	for _, src := range []string{"a {", "}", "a: [1 2]", `a: "x`, "a: ,"} {
		if _, err := ParseTextProto(src); err == nil {
			t.Errorf("ParseTextProto(%q) succeeded, want an error", src)
		}
	}
}

func TestSharedCasesParse(t *testing.T) {
	dir := DataDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.textproto"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no textproto files in %s: %v", dir, err)
	}
	for _, f := range files {
		m, err := ParseTextProtoFile(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if v, _ := m.Message("voting_parameters").Int("number_of_votes", 0); v != 9 {
			t.Errorf("%s: number_of_votes = %d, want 9", filepath.Base(f), v)
		}
	}
}

func TestVerifyApproximateDP(t *testing.T) {
	a, b := NewHistogram(1), NewHistogram(1)
	// A: 0 w.p. 3/4, 1 w.p. 1/4; B swapped. Ratio 3 = e^ln3: exactly ln3-DP.
	for i := 0; i < 3; i++ {
		a.Add(0)
		b.Add(1)
	}
	a.Add(1)
	b.Add(0)
	if !VerifyApproximateDP(a, b, 1.0986123, 0, 1e-9) {
		t.Error("a ln3-DP pair was rejected")
	}
	if VerifyApproximateDP(a, b, 0.5, 0, 1e-9) {
		t.Error("a pair with privacy loss ln 3 passed at epsilon 0.5")
	}
	if got := DPTestValue(a, b, 0); got != 0.5 {
		t.Errorf("DPTestValue at eps 0 = %v, want total variation 0.5", got)
	}
}

func TestVerifyCloseness(t *testing.T) {
	same1, same2, other := NewHistogram(1), NewHistogram(1), NewHistogram(1)
	for i := 0; i < 10000; i++ {
		same1.Add(float64(i % 10))
		same2.Add(float64((i + 3) % 10))
		other.Add(float64(i % 5))
	}
	if !VerifyCloseness(same1, same2, 0.05) {
		t.Error("identical distributions were rejected")
	}
	if VerifyCloseness(same1, other, 0.05) {
		t.Error("distributions at l2 distance 0.32 were accepted at tolerance 0.05")
	}
}

func TestRunBallot(t *testing.T) {
	seq := []bool{false, true, true, false, true}
	i := 0
	ok, err := RunBallot(5, func() (bool, error) { i++; return seq[i-1], nil })
	if err != nil || !ok || i != 5 {
		t.Errorf("RunBallot = %v, %v after %d votes; want true after 5", ok, err, i)
	}
	i = 0
	ok, _ = RunBallot(9, func() (bool, error) { i++; return true, nil })
	if !ok || i != 5 {
		t.Errorf("unanimous ballot took %d votes, want 5", i)
	}
}
