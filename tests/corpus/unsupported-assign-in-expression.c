// expect: 5:11 assignment
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  double t;
  B[0] = (t = A[0]) + 1.0;
}
