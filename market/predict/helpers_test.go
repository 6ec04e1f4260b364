package predict

import (
	"fmt"
	"math"
	"math/rand"
	"time"
)

// noise draws a multiplicative noise factor around 1.
type noise struct {
	name string
	draw func(rng *rand.Rand) float64
}

// logNormal returns noise exp(N(0, sigma²)), whose median is 1.
func logNormal(sigma float64) noise {
	return noise{
		name: fmt.Sprintf("lognormal-%g", sigma),
		draw: func(rng *rand.Rand) float64 { return math.Exp(sigma * rng.NormFloat64()) },
	}
}

// uniform returns noise uniform on [1−width, 1+width].
func uniform(width float64) noise {
	return noise{
		name: fmt.Sprintf("uniform-%g", width),
		draw: func(rng *rand.Rand) float64 { return 1 + width*(2*rng.Float64()-1) },
	}
}

// sample draws one noisy runtime around typical.
func (n noise) sample(rng *rand.Rand, typical time.Duration) time.Duration {
	return time.Duration(float64(typical) * n.draw(rng))
}
