//! Whether a recorded run used the HIP-over-CUDA test runtime (the AMD code path on an NVIDIA GPU). run.json says it
//! as a field, `device.test_runtime`, which the device layer sets ([`crate::device::Props::test_runtime`]); every
//! reader asks here, so files written before that field read the same as new ones.

/// What run.json's `device.runtime_version` said of a run over the test runtime before run.json had
/// `device.test_runtime`: files written then hold this text, whatever the device layer's label says later.
const LABEL_BEFORE_THE_FIELD: &str = "HIP over CUDA test runtime";

/// Whether the run whose run.json `device` object this is used the test runtime: its `test_runtime` field, or in a
/// file from before that field, whether its runtime text names the test runtime.
pub fn recorded(device: &serde_json::Value) -> bool {
    device["test_runtime"]
        .as_bool()
        .unwrap_or_else(|| device["runtime_version"].as_str().is_some_and(|r| r.contains(LABEL_BEFORE_THE_FIELD)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy_calculator::tests::h100;

    /// The field is written as the device layer says, and the runtime text keeps naming the label; a file from
    /// before the field gets it from that text; where the field is there, it decides.
    #[test]
    fn the_test_runtime_is_a_field_and_older_files_get_it_from_their_runtime_text() {
        let label = crate::device::amd::TEST_RUNTIME_LABEL;
        let mut device = h100();
        device.test_runtime = true;
        device.runtime_version = format!("{label} /x/libamdhip64.so: NVIDIA hardware (not an AMD GPU); HIP 6.3 API");
        let run = serde_json::json!({ "device": device, "invocations": [] });
        assert_eq!(run["device"]["test_runtime"], true, "{run}");
        let dir = tempfile::tempdir().unwrap();
        let read = |json: &serde_json::Value| {
            std::fs::write(super::super::run_json::path(dir.path()), json.to_string()).unwrap();
            super::super::run_json::read(dir.path()).unwrap().unwrap().device
        };
        let read_back = read(&run);
        assert!(read_back.test_runtime && read_back.runtime_version.starts_with(label), "{read_back:?}");
        let mut flagged_off = run.clone();
        flagged_off["device"]["test_runtime"] = false.into();
        assert!(!read(&flagged_off).test_runtime);
        for (runtime, over) in [(device.runtime_version.as_str(), true), ("CUDA driver API 13.0", false)] {
            let mut older = run.clone();
            older["device"].as_object_mut().unwrap().remove("test_runtime");
            older["device"]["runtime_version"] = runtime.into();
            assert_eq!(recorded(&older["device"]), over, "{runtime}");
            assert_eq!(read(&older).test_runtime, over, "{runtime}");
        }
        // Files from before the field hold the label as it was then: should the label change, keep the old text.
        assert_eq!(LABEL_BEFORE_THE_FIELD, label);
    }
}
