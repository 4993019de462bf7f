// expect: 4:3 parameter
// options: --size N=8
void f(int N, double x, double A[N]) {
  x = 2.0;
  A[0] = x;
}
