// expect: 3:5 void
// options: --size N=8
int f(int N, double A[N]) {
  A[0] = 1.0;
}
