// calibrate_host: this machine's DeviceProfile, named "host": measure_host's rates fitted by
// host_profile, with the model's error measured by measure_uncertainty.
#ifndef TENSAT_EXEC_CALIBRATE_H
#define TENSAT_EXEC_CALIBRATE_H

#include "tensat/exec/measure_host.h"
#include "tensat/exec/uncertainty_probes.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Measures this machine and returns its profile, named "host": `host_profile(measure_host())`
/// with its error factors from `measure_uncertainty`.
[[nodiscard]] inline DeviceProfile calibrate_host(const CalibrationOptions& options = {}) {
  DeviceProfile profile = host_profile(measure_host(options));
  (void)measure_uncertainty(profile, options);
  return profile;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_CALIBRATE_H
