// expect: 4:15 iterator
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (double x = 0; x < N; x++)
    B[0] = A[0];
}
