// expect: 4:12 hides
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int N = 0; N < 4; N++)
    B[0] = A[0];
}
