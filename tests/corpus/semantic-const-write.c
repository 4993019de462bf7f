// expect: 4:3 const
// options: --size N=8
void f(int N, const double A[N], double B[N]) {
  A[0] = B[0];
}
