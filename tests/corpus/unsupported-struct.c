// expect: 3:8 struct
// options: --size N=8
struct P { double x; };
void f(int N, double A[N], double B[N]) {
  B[0] = A[0];
}
