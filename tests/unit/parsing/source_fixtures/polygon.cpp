// Simple polygon geometry on the plane.
#include <cmath>
#include <vector>

namespace geo {

/// A point on the plane.
struct Point {
    double x;
    double y;
};

/// A closed polygon given by its vertices in order.
class Polygon {
public:
    explicit Polygon(std::vector<Point> vertices) : vertices_(std::move(vertices)) {}

    /// The signed area: positive when the vertices run counter-clockwise.
    [[nodiscard]] double signedArea() const {
        double twice = 0.0;
        for (std::size_t i = 0; i < vertices_.size(); ++i) {
            const Point& a = vertices_[i];
            const Point& b = vertices_[(i + 1) % vertices_.size()];

            twice += a.x * b.y - b.x * a.y;
        }
        return twice / 2.0;
    }

    /// The length of the boundary.
    double perimeter() const;

private:
    std::vector<Point> vertices_;
};

/// The distance between two points.
inline double distance(const Point& a, const Point& b) {
    const double dx = a.x - b.x;

    return std::hypot(dx, a.y - b.y);
}

}  // namespace geo
