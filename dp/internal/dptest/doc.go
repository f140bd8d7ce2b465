// Package dptest holds the statistical test machinery shared by the tests of
// dpsql's mechanisms (dp/noise, dp/selection, dp/agg). It is imported only
// from _test.go files.
//
// It has three parts.
//
// Test data: ParseTextProto reads the protobuf text format of the
// statistical cases in testdata/dp_statistical of this package (copied from
// google/differential-privacy under the Apache License 2.0, with the licence
// and a README saying where from; messages in braces, scalar
// fields, repeated fields given one per line or as [a, b] lists, enum names,
// quoted strings, # comments). Message accessors (Messages, Float, Int,
// Floats, Ints, String, Enum) read fields by name. DataDir finds that folder
// from the module root and fails the test if it is missing.
//
// Histogram tests, as in Google's differential-privacy statistical tests:
// a Histogram counts samples rounded to a granularity (RoundToMultiple);
// VerifyApproximateDP accepts two histograms of outputs on neighbouring
// inputs when sum_x max(0, A(x) - e^eps B(x)) is below delta + tolerance in
// both directions; VerifyCloseness accepts two histograms whose l2 distance,
// estimated from collision counts, is below half the tolerance; RunBallot
// takes the majority of repeated votes, stopping once it is decided.
//
// Reference distributions: ReferenceLaplace and ReferenceGaussian draw, in
// floating point, from the continuous distributions a mechanism's output is
// compared with; they take a uniform source so that tests stay reproducible.
//
// Typical use, for one case with Laplace noise:
//
//	dir := dptest.DataDir(t)
//	root, err := dptest.ParseTextProtoFile(filepath.Join(dir, "count_dp_test_cases.textproto"))
//	for _, c := range root.Messages("count_dp_test_case") {
//		p := c.Message("count_sampling_parameters")
//		...
//		ok, err := dptest.RunBallot(votes, func() (bool, error) {
//			a, b := dptest.NewHistogram(0), dptest.NewHistogram(0)
//			for i := 0; i < n; i++ { a.Add(sampleA()); b.Add(sampleB()) }
//			return dptest.VerifyApproximateDP(a, b, eps, delta, tol), nil
//		})
//	}
package dptest
