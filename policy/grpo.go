package policy

import "math"

// Epsilon keeps GRPO's normalization finite for groups of equal rewards.
const Epsilon = 1e-6

// Advantages writes GRPO's group-relative advantages of rewards into out
// (which must be as long) and returns the group's reward standard deviation:
// out[i] = (r[i] − mean) / (std + eps). A group whose rewards are all equal
// gets advantages of 0 and std 0: it carries no signal.
func Advantages(rewards, out []float64, eps float64) (std float64) {
	n := float64(len(rewards))
	if n == 0 {
		return 0
	}
	var mean float64
	for _, r := range rewards {
		mean += r
	}
	mean /= n
	var ss float64
	for _, r := range rewards {
		ss += (r - mean) * (r - mean)
	}
	std = math.Sqrt(ss / n)
	for i, r := range rewards {
		if std == 0 {
			out[i] = 0
			continue
		}
		out[i] = (r - mean) / (std + eps)
	}
	return std
}

// Variance is the population variance of rewards; for 0/1 rewards it is
// p(1 − p), the learnability of the task at the group's pass rate p.
func Variance(rewards []float64) float64 {
	n := float64(len(rewards))
	if n == 0 {
		return 0
	}
	var mean, ss float64
	for _, r := range rewards {
		mean += r
	}
	mean /= n
	for _, r := range rewards {
		ss += (r - mean) * (r - mean)
	}
	return ss / n
}

// ClippedSurrogate is GRPO's (PPO's) per-action objective to maximize:
// min(ρA, clip(ρ, 1−ε, 1+ε)A) with ρ = exp(logp − oldLogp), the ratio of the
// current policy to the behaviour policy that produced the action.
func ClippedSurrogate(logp, oldLogp, adv, clip float64) float64 {
	ratio := math.Exp(logp - oldLogp)
	clipped := math.Min(math.Max(ratio, 1-clip), 1+clip)
	return math.Min(ratio*adv, clipped*adv)
}

// StalenessWeight is the weight of an action produced by policy version v
// when the learner is at version current: 1 within maxStaleness versions,
// else 0 (the learner drops it).
func StalenessWeight(v, current int64, maxStaleness int) float64 {
	if current-v > int64(maxStaleness) {
		return 0
	}
	return 1
}
