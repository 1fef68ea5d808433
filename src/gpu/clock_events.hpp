// The one definition of NVML's clock-event ("throttle") reason bits: their names, and the groups doctor, bench and the
// alert rules judge by. Values come from nvml.h, so a renamed or added bit is the header's, not a copy's.
#pragma once

#include <nvml.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace gsq::gpu::clock_events {

inline constexpr uint64_t kGpuIdle = nvmlClocksEventReasonGpuIdle;
inline constexpr uint64_t kApplicationsClocks = nvmlClocksEventReasonApplicationsClocksSetting;
inline constexpr uint64_t kSwPowerCap = nvmlClocksEventReasonSwPowerCap;
inline constexpr uint64_t kHwSlowdown = nvmlClocksThrottleReasonHwSlowdown;  // nvml.h has no "Event" spelling
inline constexpr uint64_t kSyncBoost = nvmlClocksEventReasonSyncBoost;
inline constexpr uint64_t kSwThermal = nvmlClocksEventReasonSwThermalSlowdown;
inline constexpr uint64_t kHwThermal = nvmlClocksThrottleReasonHwThermalSlowdown;
inline constexpr uint64_t kHwPowerBrake = nvmlClocksThrottleReasonHwPowerBrakeSlowdown;
inline constexpr uint64_t kDisplayClock = nvmlClocksEventReasonDisplayClockSetting;

// Slowdowns: thermal, hardware and power-brake events that cut the clock below what the work asked for.
inline constexpr uint64_t kSlowdowns = kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;
// What a timed sample must not carry (bench's throttle rule): the slowdowns and the power cap.
inline constexpr uint64_t kThrottles = kSlowdowns | kSwPowerCap;
// Reasons that say nothing about a busy GPU's speed (idle, a setting, sync boost, the display clock).
inline constexpr uint64_t kBenign = kGpuIdle | kApplicationsClocks | kSyncBoost | kDisplayClock;

// Names as the exporter's `reason` label and every printed list use them.
inline constexpr std::array<std::pair<uint64_t, std::string_view>, 11> kNames{{
    {kGpuIdle, "gpu_idle"},
    {kApplicationsClocks, "applications_clocks_setting"},
    {kSwPowerCap, "sw_power_cap"},
    {kHwSlowdown, "hw_slowdown"},
    {kSyncBoost, "sync_boost"},
    {kSwThermal, "sw_thermal_slowdown"},
    {kHwThermal, "hw_thermal_slowdown"},
    {kHwPowerBrake, "hw_power_brake_slowdown"},
    {kDisplayClock, "display_clock_setting"},
    {0x200, "board_limit"},  // nvmlClocksEventReasonBoardLimit (NVML 13); absent from older headers
    {0x400, "reliability"},  // nvmlClocksEventReasonReliability (NVML 13)
}};

}  // namespace gsq::gpu::clock_events
