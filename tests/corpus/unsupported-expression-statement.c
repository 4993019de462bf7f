// expect: 4:3 no effect
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  A[0] + 1;
}
