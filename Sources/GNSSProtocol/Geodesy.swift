// Geodesy on the WGS84 ellipsoid: ECEF to geodetic coordinates, ECEF velocity to north-east-down,
// and the distance between two positions (for speeds derived from successive fixes).

/// WGS84 ellipsoid conversions.
public enum WGS84 {
    public static let semiMajorAxis = 6_378_137.0
    public static let flattening = 1 / 298.257_223_563
    static let e2 = flattening * (2 - flattening)

    /// ECEF (metres) to geodetic latitude and longitude (degrees) and ellipsoidal height (metres),
    /// by Bowring's method refined by iteration.
    public static func geodetic(
        x: Double, y: Double, z: Double
    ) -> (latitude: Double, longitude: Double, height: Double) {
        let a = semiMajorAxis
        let p = (x * x + y * y).squareRoot()
        let longitude = arcTangent2(y, x)
        var latitude = arcTangent2(z, p * (1 - e2))
        var height = 0.0
        for _ in 0..<6 {
            let s = sine(latitude)
            let n = a / (1 - e2 * s * s).squareRoot()
            height = p / cosine(latitude) - n
            latitude = arcTangent2(z, p * (1 - e2 * n / (n + height)))
        }
        if p < 1 {
            // Near a pole the cosine form loses precision; use the polar radius.
            let b = a * (1 - flattening)
            height = abs(z) - b
        }
        return (latitude * 180 / .pi, longitude * 180 / .pi, height)
    }

    /// ECEF velocity (m/s) at a geodetic position (degrees) as north, east, down components.
    public static func ned(
        vx: Double, vy: Double, vz: Double, latitude: Double, longitude: Double
    )
        -> (north: Double, east: Double, down: Double)
    {
        let phi = latitude * .pi / 180
        let lambda = longitude * .pi / 180
        let sp = sine(phi), cp = cosine(phi), sl = sine(lambda), cl = cosine(lambda)
        let north = -sp * cl * vx - sp * sl * vy + cp * vz
        let east = -sl * vx + cl * vy
        let up = cp * cl * vx + cp * sl * vy + sp * vz
        return (north, east, -up)
    }

    /// Great-circle distance in metres between two positions (degrees) on a sphere of the semi-major
    /// axis's radius: gpsd's `earth_distance` uses a sphere too, and speeds derived from it must match.
    public static func sphericalDistance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let toRadians = Double.pi / 180
        let dLat = (lat2 - lat1) * toRadians
        let dLon = (lon2 - lon1) * toRadians
        let a =
            sine(dLat / 2) * sine(dLat / 2)
            + cosine(lat1 * toRadians) * cosine(lat2 * toRadians) * sine(dLon / 2) * sine(dLon / 2)
        return 2 * semiMajorAxis * arcSine(a.squareRoot())
    }
}
