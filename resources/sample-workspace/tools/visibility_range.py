"""Geographic range of a light, as the Harwick Coast Light Service computed it.

The service's engineers used the usual rule for the distance to the horizon, in nautical miles:
2.08 times the square root of the height in metres, for both the light and the observer's eye.
The range quoted in the light list is the lesser of this geographic range and the light's nominal
(luminous) range.
"""

import math

HORIZON_FACTOR = 2.08  # nautical miles per square root of a metre, refraction included
OBSERVER_EYE_M = 5.0  # the height of eye the service assumed for a small ship's bridge


def geographic_range(focal_height_m: float, eye_height_m: float = OBSERVER_EYE_M) -> float:
    """Nautical miles at which a light at ``focal_height_m`` rises above the horizon."""
    return HORIZON_FACTOR * (math.sqrt(focal_height_m) + math.sqrt(eye_height_m))


if __name__ == "__main__":
    # Focal heights from operations/light-characteristics.csv
    for station, height in [("Gannet Point", 52), ("Skerry Rock", 33), ("Marrow Head", 71)]:
        print(f"{station}: {geographic_range(height):.1f} nautical miles")
