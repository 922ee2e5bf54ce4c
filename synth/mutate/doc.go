// Package mutate injects bugs into Go source: mutation operators over go/ast,
// grouped in families of rising difficulty (token flips, structural changes,
// Go idioms).
//
// Sites lists every place in one file where an operator applies. A Site is a
// plain value: its Edits are byte-range replacements over the original source,
// so the mutation and its exact inverse are both known. Site.Apply returns the
// mutated source (which always re-parses) and the gold patch, a unified diff
// that turns the mutant back into the original. Undo reverses the edits on the
// mutated bytes.
//
// Operators use type information when they are given it (a *types.Info from
// Check or from the caller's own type-check): type-dependent operators (for
// example, arithmetic flips on numbers only, swapped arguments of identical
// type) are skipped without it, and operators that delete code refuse sites
// whose deletion would leave a variable or import unused. A mutant is meant to
// type-check; the rare one that does not (a constant that overflows after a
// flip, a loop made terminating) is rejected downstream as non-viable.
//
// Repairs runs the other way: at lines believed buggy it proposes
// candidate fixes, the operators that change code (a token flip is its own
// inverse) and a few templates that undo what no operator inverts (an
// error replaced by nil, a guard dropped, a condition or body borrowed from
// the file: borrow.go). They are the candidates of the repair tools that
// gotask's harness serves. LM is a token trigram model of a
// module's code, whose scores of how natural an edit or a line is are
// features of the repair policies.
//
// Everything here is deterministic and synchronous. Sites, Repairs and the
// rest are safe for concurrent use on distinct inputs; an LM is safe for
// concurrent use.
package mutate
