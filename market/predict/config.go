package predict

import "time"

// Default values for the zero fields of a RuntimeConfig.
const (
	// DefaultAlpha is the EWMA weight used when RuntimeConfig.Alpha is unset.
	DefaultAlpha = 0.3
	// DefaultRuntime is the prediction used when a job type has no history
	// and the caller gives no estimate, unless RuntimeConfig.Default is set.
	DefaultRuntime = 60 * time.Second
	// DefaultMinSamples is the number of history samples needed before
	// history wins over a user estimate, unless RuntimeConfig.MinSamples
	// is set.
	DefaultMinSamples = 1
	// DefaultMaxTypes bounds the number of job types a Runtime tracks,
	// unless RuntimeConfig.MaxTypes is set.
	DefaultMaxTypes = 10000
)

// RuntimeConfig configures a Runtime. Zero or out-of-range fields take the
// defaults named by the Default constants.
type RuntimeConfig struct {
	// Alpha is the EWMA weight of a new sample, in (0, 1]; larger adapts
	// faster and smooths less. Default 0.3.
	Alpha float64
	// Default is the prediction for a job type with no history when the
	// caller gives no estimate. Default 60s.
	Default time.Duration
	// MinSamples is how many samples a job type needs before its history
	// wins over a user estimate. Default 1.
	MinSamples int
	// MaxTypes bounds the number of job types tracked; observing a new type
	// beyond it evicts the least recently updated one. Default 10000.
	MaxTypes int
}

// withDefaults returns c with every unset or out-of-range field defaulted.
func (c RuntimeConfig) withDefaults() RuntimeConfig {
	if !(c.Alpha > 0 && c.Alpha <= 1) {
		c.Alpha = DefaultAlpha
	}
	if c.Default <= 0 {
		c.Default = DefaultRuntime
	}
	if c.MinSamples <= 0 {
		c.MinSamples = DefaultMinSamples
	}
	if c.MaxTypes <= 0 {
		c.MaxTypes = DefaultMaxTypes
	}
	return c
}
